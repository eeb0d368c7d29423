// ListOffsets (key 2), v1+ (one offset per partition). Per partition, the
// timestamp selects:
//   -2 earliest (log start), -4 earliest local (the same here),
//   -1 latest (HW, or LSO for read_committed),
//   -3 the record with the largest timestamp (v7+, KIP-734),
//   -5 latest tiered offset (v9+, KIP-1005): none, there is no tiering,
//   t >= 0 the first offset whose timestamp is >= t,
// with offset -1 / timestamp -1 when there is no such record, as Kafka.
// A partition listed twice gets INVALID_REQUEST on every occurrence, as Kafka.
#include <set>
#include <string>
#include <utility>

#include "broker/api/authorize.h"
#include "broker/api/handler.h"
#include "broker/api/partition_checks.h"
#include "broker/kafka_error.h"

namespace headrace::broker {
namespace {

using Response = protocol::ListOffsetsResponse;
using PartitionResponse = Response::ListOffsetsPartitionResponse;

constexpr int64_t kLatestTiered = -5;

void SetError(PartitionResponse* out, KafkaError error) {
  out->error_code = Code(error);
  out->timestamp = -1;
  out->offset = -1;
  out->leader_epoch = -1;
}

void ListOne(const Partition& partition, const protocol::ListOffsetsRequest::ListOffsetsPartition& in,
             IsolationLevel isolation, PartitionResponse* out) {
  if (KafkaError e = CheckLeaderEpoch(in.current_leader_epoch, partition); e != KafkaError::kNone) {
    SetError(out, e);
    return;
  }
  if (in.timestamp == kLatestTiered) {
    SetError(out, KafkaError::kNone);
    return;
  }
  Result<OffsetAndTimestamp> found = partition.ListOffset(in.timestamp, isolation);
  if (!found.ok()) {
    SetError(out, ToKafkaError(found.status()));
    return;
  }
  out->error_code = Code(KafkaError::kNone);
  out->offset = found->offset.value();
  out->timestamp = found->timestamp.value();
  out->leader_epoch = found->offset.value() >= 0 ? partition.EpochAt(found->offset).value() : -1;
}

void HandleListOffsets(BrokerContext& ctx, protocol::ListOffsetsRequest& request, Request req) {
  const IsolationLevel isolation = ToIsolationLevel(request.isolation_level);
  std::set<std::pair<std::string, int32_t>> seen, duplicates;
  for (const auto& t : request.topics)
    for (const auto& p : t.partitions)
      if (!seen.emplace(t.name, p.partition_index).second) duplicates.emplace(t.name, p.partition_index);

  Response resp;
  resp.topics.reserve(request.topics.size());
  for (const auto& t : request.topics) {
    auto& topic_resp = resp.topics.emplace_back();
    topic_resp.name = t.name;
    std::shared_ptr<const Topic> topic = ctx.topics().FindTopic(t.name);
    const bool described = AuthorizedOnTopic(ctx, req, AclOperation::kDescribe, t.name);
    for (const auto& p : t.partitions) {
      PartitionResponse& out = topic_resp.partitions.emplace_back();
      out.partition_index = p.partition_index;
      if (!described) {
        SetError(&out, KafkaError::kTopicAuthorizationFailed);
      } else if (duplicates.count({t.name, p.partition_index})) {
        SetError(&out, KafkaError::kInvalidRequest);
      } else if (!topic || p.partition_index < 0 || p.partition_index >= topic->partition_count()) {
        SetError(&out, KafkaError::kUnknownTopicOrPartition);
      } else if (!topic->partitions[p.partition_index] ||
                 !topic->partitions[p.partition_index]->is_leader()) {  // cluster mode
        SetError(&out, KafkaError::kNotLeaderOrFollower);
      } else {
        ListOne(*topic->partitions[p.partition_index], p, isolation, &out);
      }
    }
  }
  req.Reply(resp);
}

}  // namespace

extern const ApiHandler kListOffsetsHandler =
    MakeHandler<protocol::ListOffsetsRequest, HandleListOffsets>(1, 9);

}  // namespace headrace::broker
