// CreateTopics (key 19), v2..7. Each topic is created independently and
// gets its own result:
//   - a name that occurs more than once in the request: INVALID_REQUEST for
//     that name (one result), nothing created;
//   - num_partitions / replication_factor -1 take num.partitions /
//     default.replication.factor (KIP-464; accepted at every version);
//   - manual assignments are accepted only when num_partitions and
//     replication_factor are both -1, the partition indexes are 0..n-1 and
//     every replica list is exactly this node (single node), otherwise
//     INVALID_REQUEST / INVALID_REPLICA_ASSIGNMENT;
//   - configs with a null value or a repeated key: INVALID_CONFIG /
//     INVALID_REQUEST; unknown keys and bad values: INVALID_CONFIG (the
//     state layer validates);
//   - headrace.max.partitions / .per.request (all topics of the request
//     together): POLICY_VIOLATION for a topic that would go over;
//   - an internal topic (__consumer_offsets, __transaction_state):
//     TOPIC_ALREADY_EXISTS (the broker creates them itself);
//   - validate_only checks everything and creates nothing.
// v5+ results carry num_partitions, replication_factor and the topic's
// configs (KIP-525); v7 the new topic id (zero for validate_only).
// The work is synchronous: timeout_ms is not needed.
#include <string>
#include <vector>

#include "broker/api/admin_util.h"
#include "broker/api/cluster_admin.h"
#include "broker/api/authorize.h"
#include "broker/api/handler.h"
#include "broker/api/partition_checks.h"
#include "broker/base/kafka_error.h"
#include "broker/partition/topic_name.h"

namespace headrace::broker {
namespace {

using Req = protocol::CreateTopicsRequest;
using Resp = protocol::CreateTopicsResponse;

// Manual assignments -> partition count; every replica must be this node.
Status CheckAssignments(const Req::CreatableTopic& t, int32_t node_id, int32_t* partitions) {
  if (t.num_partitions != -1 || t.replication_factor != -1) {
    return KafkaStatus(KafkaError::kInvalidRequest,
                       "Both numPartitions or replicationFactor and replicasAssignments were "
                       "set. Both cannot be used at the same time.");
  }
  std::vector<bool> seen(t.assignments.size(), false);
  for (const auto& a : t.assignments) {
    if (a.partition_index < 0 || static_cast<size_t>(a.partition_index) >= seen.size() ||
        seen[a.partition_index]) {
      return KafkaStatus(KafkaError::kInvalidReplicaAssignment,
                         "Partitions should be a consecutive 0-based integer sequence; got index " +
                             std::to_string(a.partition_index) + ".");
    }
    seen[a.partition_index] = true;
    if (a.broker_ids.empty()) {
      return KafkaStatus(KafkaError::kInvalidReplicaAssignment,
                         "Partition " + std::to_string(a.partition_index) +
                             " has an empty replica list.");
    }
    for (int32_t b : a.broker_ids) {
      if (b != node_id || a.broker_ids.size() != 1) {
        return KafkaStatus(KafkaError::kInvalidReplicaAssignment,
                           "The manual partition assignment of partition " +
                               std::to_string(a.partition_index) + " includes broker " +
                               std::to_string(b) +
                               ", but this single-node cluster only has broker " +
                               std::to_string(node_id) + " (one replica per partition).");
      }
    }
  }
  *partitions = static_cast<int32_t>(t.assignments.size());
  return Status::OK();
}

// Turns one requested topic into a registry request. Errors are per topic.
Status BuildRequest(const Req::CreatableTopic& t, int32_t node_id, bool validate_only,
                    CreateTopicRequest* out) {
  out->name = t.name;
  out->num_partitions = t.num_partitions;
  out->replication_factor = t.replication_factor;
  out->validate_only = validate_only;
  if (!t.assignments.empty()) {
    HR_RETURN_IF_ERROR(CheckAssignments(t, node_id, &out->num_partitions));
    out->replication_factor = 1;
  }
  for (const auto& c : t.configs) {
    if (!c.value) {
      return KafkaStatus(KafkaError::kInvalidConfig,
                         "Null value not supported for topic configs: " + c.name);
    }
    if (!out->configs.emplace(c.name, *c.value).second) {
      return KafkaStatus(KafkaError::kInvalidRequest, "Duplicate topic config: " + c.name);
    }
  }
  return Status::OK();
}

// `budget`: partitions the rest of the request may create; reduced by this
// topic's.
Resp::CreatableTopicResult CreateOne(BrokerContext& ctx, const Request& req,
                                     const Req::CreatableTopic& t, bool validate_only,
                                     int32_t* budget) {
  Resp::CreatableTopicResult r;
  r.name = t.name;
  CreateTopicRequest request;
  // ACLs: CREATE on the CLUSTER or on the topic.
  Status st = MayCreateTopic(ctx, req, t.name);
  if (st.ok()) st = CheckClientOpOnInternalTopic(t.name, InternalTopicOp::kCreate);
  if (st.ok()) st = BuildRequest(t, ctx.node_id, validate_only, &request);
  request.partition_budget = *budget;
  Result<CreatedTopic> created = st.ok() ? ctx.topics().CreateTopic(request) : Result<CreatedTopic>(st);
  if (created.ok()) *budget -= created->num_partitions;
  if (!created.ok()) {
    r.error_code = Code(ToKafkaError(created.status()));
    r.error_message = created.status().message();
    r.configs = std::nullopt;  // KIP-525: no configs for a failed topic
    return r;
  }
  r.error_code = Code(KafkaError::kNone);
  r.error_message = std::nullopt;
  r.topic_id = created->id;
  r.num_partitions = created->num_partitions;
  r.replication_factor = created->replication_factor;
  r.configs.emplace();
  for (const ConfigEntry& e : created->configs) {
    Resp::CreatableTopicConfigs c;
    c.name = e.name;
    c.value = e.value;
    c.read_only = e.read_only;
    c.config_source = static_cast<int8_t>(e.source);
    c.is_sensitive = e.sensitive;
    r.configs->push_back(std::move(c));
  }
  return r;
}

void HandleCreateTopics(BrokerContext& ctx, Req& req, Request request) {
  if (ctx.state->cluster()) return ClusterCreateTopics(ctx, req, std::move(request));
  std::vector<std::string> names;
  names.reserve(req.topics.size());
  for (const auto& t : req.topics) names.push_back(t.name);
  const std::set<std::string> dups = DuplicateNames(names);

  Resp resp;
  std::set<std::string> reported;
  int32_t budget = ctx.config().max_partitions_per_request;
  for (const auto& t : req.topics) {
    if (dups.count(t.name)) {
      if (!reported.insert(t.name).second) continue;  // one result per duplicated name
      Resp::CreatableTopicResult r;
      r.name = t.name;
      r.error_code = Code(KafkaError::kInvalidRequest);
      r.error_message = "Create topics request from client `" +
                        request.header().client_id.value_or("") +
                        "` contains multiple entries for the topic " + t.name + ".";
      r.configs = std::nullopt;
      resp.topics.push_back(std::move(r));
      continue;
    }
    resp.topics.push_back(CreateOne(ctx, request, t, req.validate_only, &budget));
  }
  request.Reply(resp);
}

}  // namespace

extern const ApiHandler kCreateTopicsHandler =
    MakeHandler<Req, OnAdminWorker<Req, HandleCreateTopics>>(2, 7);

}  // namespace headrace::broker
