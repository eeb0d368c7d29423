#include "broker/api/cluster_lookup.h"

#include <algorithm>

#include "broker/base/json.h"
#include "broker/base/kafka_error.h"
#include "broker/partition/topic_name.h"
#include "common/logging.h"

namespace headrace::broker {

void RequestTopicCreation(BrokerContext& ctx, const std::string& name, int32_t partitions,
                          int32_t replication_factor, const ConfigMap& configs) {
  ClusterState* cluster = ctx.state->cluster();
  if (!cluster->BeginAutoCreate(name)) return;  // already asked
  const int64_t live = static_cast<int64_t>(cluster->view()->brokers.size());
  json::Object config_json;
  for (const auto& [k, v] : configs) config_json[k] = json::Value(v);
  json::Object topic{{"name", name},
                     {"num_partitions", int64_t{partitions}},
                     {"replication_factor",
                      std::max<int64_t>(1, std::min<int64_t>(replication_factor, live))},
                     {"assignments", nullptr},
                     {"configs", json::Value(std::move(config_json))},
                     {"validate_only", false}};
  json::Object payload{{"topics", json::Array{json::Value(std::move(topic))}}};
  cluster->requests().Submit(
      "create_topics", json::Write(json::Value(std::move(payload))),
      ControlRequests::Clock::now() + std::chrono::seconds(30),
      [cluster, name](bool ok, const std::string& result) {
        if (!ok) HR_LOG(kWarn) << "creating topic " << name << ": " << result;
        cluster->EndAutoCreate(name);
      });
}

Status RequestAutoCreate(BrokerContext& ctx, const std::string& name) {
  HR_RETURN_IF_ERROR(ValidateTopicName(name));
  // Internal topics are created by FindCoordinator with their own configs,
  // never as ordinary topics.
  if (!ctx.config().auto_create_topics_enable || IsInternalTopic(name)) {
    return KafkaStatus(KafkaError::kUnknownTopicOrPartition, "Unknown topic " + name);
  }
  RequestTopicCreation(ctx, name, ctx.config().num_partitions,
                       ctx.config().default_replication_factor, {});
  return KafkaStatus(KafkaError::kLeaderNotAvailable, "Topic " + name + " is being created.");
}

Result<std::shared_ptr<const Topic>> FindTopicForData(BrokerContext& ctx, const std::string& name) {
  ClusterState* cluster = ctx.state->cluster();
  if (cluster == nullptr) return ctx.topics().FindOrAutoCreate(name);
  if (auto local = ctx.topics().FindTopic(name)) return local;
  if (cluster->view()->FindTopic(name)) {
    return KafkaStatus(KafkaError::kNotLeaderOrFollower,
                       "This broker holds no replica of topic " + name);
  }
  return RequestAutoCreate(ctx, name);
}

void SubmitControlRequest(BrokerContext& ctx, const Request& req, std::string kind,
                          std::string payload, int32_t timeout_ms,
                          std::function<void(bool ok, const std::string& result)> reply) {
  const auto timeout = std::chrono::milliseconds(timeout_ms > 0 ? timeout_ms : 30000);
  ctx.state->cluster()->requests().Submit(
      std::move(kind), std::move(payload), ControlRequests::Clock::now() + timeout,
      [req, reply = std::move(reply)](bool ok, const std::string& result) {
        req.RunOnLoop([reply, ok, result] { reply(ok, result); });
      });
}

}  // namespace headrace::broker
