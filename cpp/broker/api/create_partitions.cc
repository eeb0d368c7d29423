// CreatePartitions (key 37), v0..3: grows topics to `count` partitions.
// Per topic:
//   unknown topic                           UNKNOWN_TOPIC_OR_PARTITION
//   count <= current, or above the limit    INVALID_PARTITIONS
//   over headrace.max.partitions or the request's share of
//   headrace.max.partitions.per.request     POLICY_VIOLATION
//   assignments: one per new partition, each exactly [this node], else
//                                           INVALID_REPLICA_ASSIGNMENT
//   a topic named twice                     INVALID_REQUEST (one result)
// validate_only checks without changing anything. New partitions take the
// topic's current configuration.
#include <set>
#include <string>
#include <vector>

#include "broker/api/admin_util.h"
#include "broker/api/cluster_admin.h"
#include "broker/api/authorize.h"
#include "broker/api/handler.h"
#include "broker/base/kafka_error.h"
#include "broker/partition/topic_name.h"

namespace headrace::broker {
namespace {

using Req = protocol::CreatePartitionsRequest;
using Resp = protocol::CreatePartitionsResponse;

// Explicit assignments must cover exactly the added partitions, one replica
// each, on this node.
Status CheckAssignments(BrokerContext& ctx, const Req::CreatePartitionsTopic& t) {
  if (!t.assignments || t.assignments->empty()) return Status::OK();
  std::shared_ptr<const Topic> topic = ctx.topics().FindTopic(t.name);
  if (!topic) return Status::OK();  // the registry reports the unknown topic
  const int64_t added = int64_t{t.count} - topic->partition_count();
  if (added > 0 && static_cast<int64_t>(t.assignments->size()) != added) {
    return KafkaStatus(KafkaError::kInvalidReplicaAssignment,
                       "Increasing the number of partitions by " + std::to_string(added) +
                           " but " + std::to_string(t.assignments->size()) +
                           " assignments provided.");
  }
  for (const auto& a : *t.assignments) {
    if (a.broker_ids.size() != 1 || a.broker_ids[0] != ctx.node_id) {
      return KafkaStatus(KafkaError::kInvalidReplicaAssignment,
                         "Each new partition must have exactly one replica, on broker " +
                             std::to_string(ctx.node_id) + " (single-node cluster).");
    }
  }
  return Status::OK();
}

// `budget`: partitions the rest of the request may create; reduced by this
// topic's new ones.
Resp::CreatePartitionsTopicResult Grow(BrokerContext& ctx, const Request& req,
                                       const Req::CreatePartitionsTopic& t, bool validate_only,
                                       int32_t* budget) {
  Status st = RequireOnTopic(ctx, req, AclOperation::kAlter, t.name);  // ACLs
  if (st.ok()) st = CheckClientOpOnInternalTopic(t.name, InternalTopicOp::kCreatePartitions);
  if (st.ok()) st = CheckAssignments(ctx, t);
  std::shared_ptr<const Topic> before = ctx.topics().FindTopic(t.name);
  if (st.ok()) st = ctx.topics().CreatePartitions(t.name, t.count, validate_only, *budget);
  if (st.ok() && before) *budget -= t.count - before->partition_count();
  Resp::CreatePartitionsTopicResult r;
  r.name = t.name;
  r.error_code = Code(ToKafkaError(st));
  r.error_message = ErrorMessageOf(st);
  return r;
}

void HandleCreatePartitions(BrokerContext& ctx, Req& req, Request request) {
  if (ctx.state->cluster()) return ClusterCreatePartitions(ctx, req, std::move(request));
  std::vector<std::string> names;
  names.reserve(req.topics.size());
  for (const auto& t : req.topics) names.push_back(t.name);
  const std::set<std::string> dups = DuplicateNames(names);
  std::set<std::string> reported;

  Resp resp;
  int32_t budget = ctx.config().max_partitions_per_request;
  for (const auto& t : req.topics) {
    if (dups.count(t.name)) {
      if (!reported.insert(t.name).second) continue;
      Resp::CreatePartitionsTopicResult r;
      r.name = t.name;
      r.error_code = Code(KafkaError::kInvalidRequest);
      r.error_message = "Duplicate topic name.";
      resp.results.push_back(std::move(r));
      continue;
    }
    resp.results.push_back(Grow(ctx, request, t, req.validate_only, &budget));
  }
  request.Reply(resp);
}

}  // namespace

extern const ApiHandler kCreatePartitionsHandler =
    MakeHandler<Req, OnAdminWorker<Req, HandleCreatePartitions>>(0, 3);

}  // namespace headrace::broker
