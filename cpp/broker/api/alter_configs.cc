// AlterConfigs (key 33), v0..2: replaces ALL of a resource's dynamic
// configs with the given set (keys left out revert to their defaults).
//   TOPIC (2)   the new overrides are validated as a whole (unknown key or
//               bad value: INVALID_CONFIG naming the key; null value or a
//               repeated key: INVALID_REQUEST), persisted, and applied to
//               the live partitions (TopicRegistry::AlterTopicConfig).
//               Unknown topic: UNKNOWN_TOPIC_OR_PARTITION.
//   BROKER (4)  dynamic broker configs (dynamic_broker_config.h): name
//               "<node id>" replaces this broker's dynamic values, "" the
//               cluster-wide default's. Unknown or read-only key, bad value,
//               null value or a repeated key: INVALID_REQUEST naming the key.
//   GROUP (32)  replaces the group's configs (group_config_entries.h);
//               unknown key, bad value: INVALID_CONFIG.
//   other       INVALID_REQUEST.
// A resource named twice in one request: INVALID_REQUEST for each.
// validate_only checks without changing anything.
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "broker/api/admin_util.h"
#include "broker/api/cluster_admin.h"
#include "broker/api/broker_config_entries.h"
#include "broker/api/group_config_entries.h"
#include "broker/api/handler.h"
#include "broker/base/kafka_error.h"
#include "broker/partition/topic_name.h"

namespace headrace::broker {
namespace {

using Req = protocol::AlterConfigsRequest;
using Resp = protocol::AlterConfigsResponse;

// The resource's configs as a map. INVALID_REQUEST for a null value. A
// repeated key takes its last value, as Kafka's ZooKeeper-mode broker
// (ZkAdminManager reads the entries into Properties; KRaft refuses them):
// librdkafka before 2.x's read-modify-write AlterConfigs sends the changed
// key twice.
Result<ConfigMap> ConfigsOf(const Req::AlterConfigsResource& r) {
  ConfigMap configs;
  for (const auto& c : r.configs) {
    if (!c.value) {
      return KafkaStatus(KafkaError::kInvalidRequest, "Null value not supported for : " + c.name);
    }
    configs[c.name] = *c.value;
  }
  return configs;
}

Status AlterTopic(BrokerContext& ctx, const Req::AlterConfigsResource& r, bool validate_only) {
  HR_RETURN_IF_ERROR(ValidateTopicName(r.resource_name));
  HR_ASSIGN_OR_RETURN(ConfigMap configs, ConfigsOf(r));
  if (ctx.state->cluster() != nullptr) {  // stored in ZooKeeper, applied from there
    return ClusterAlterTopicConfig(
        ctx, r.resource_name,
        [&](const ConfigMap&) -> Result<ConfigMap> {  // replaces every override
          HR_RETURN_IF_ERROR(ValidateTopicConfigs(configs));
          ConfigMap overrides;
          for (const auto& [k, v] : configs) overrides[k] = NormalizeTopicConfigValue(k, v);
          return overrides;
        },
        validate_only);
  }
  return ctx.topics().AlterTopicConfig(r.resource_name, configs, validate_only);
}

void HandleAlterConfigs(BrokerContext& ctx, Req& req, Request request) {
  ReplyAlterConfigs<Resp>(
      ctx, req, request,
      [&](const Req::AlterConfigsResource& r) { return AlterTopic(ctx, r, req.validate_only); },
      [&](const Req::AlterConfigsResource& r) -> Status {
        HR_ASSIGN_OR_RETURN(ConfigMap configs, ConfigsOf(r));
        return ReplaceBrokerLayer(ctx, r.resource_name, configs, req.validate_only);
      },
      [&](const Req::AlterConfigsResource& r) -> Status {
        HR_ASSIGN_OR_RETURN(ConfigMap configs, ConfigsOf(r));
        return AlterGroupConfigs(
            ctx, r.resource_name,
            [&](const ConfigMap&) -> Result<ConfigMap> { return configs; }, req.validate_only);
      });
}

}  // namespace

extern const ApiHandler kAlterConfigsHandler =
    MakeHandler<protocol::AlterConfigsRequest,
                OnAdminWorker<protocol::AlterConfigsRequest, HandleAlterConfigs>>(0, 2);

}  // namespace headrace::broker
