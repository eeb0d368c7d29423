// ListOffsets (key 2), v1+ (one offset per partition). Per partition, the
// timestamp selects:
//   -2 earliest (log start), -4 earliest local (the same here),
//   -1 latest (HW, or LSO for read_committed),
//   -3 the record with the largest timestamp (v7+, KIP-734),
//   -5 latest tiered offset (v9+, KIP-1005): none, there is no tiering,
//   t >= 0 the first offset whose timestamp is >= t,
// with offset -1 / timestamp -1 when there is no such record, as Kafka.
// A partition listed twice gets INVALID_REQUEST on every occurrence, as Kafka.
//
// Every answer but the earliest ones is bounded by the HW (or the LSO). So
// that a client's ListOffsets right after its own acknowledged write sees
// it (an acks=1 record is acknowledged before its fsync, or its followers'
// fetch, moves the HW), a partition whose HW is below its LEO at the
// request's arrival waits in the purgatory until the HW reaches that LEO,
// at most kHwWaitMs; then it answers from the HW it has, as Kafka would
// (not an error): a follower stopped for up to replica.lag.time.max.ms
// must not stall ListOffsets that long.
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "broker/api/authorize.h"
#include "broker/api/handler.h"
#include "broker/api/hw_park.h"
#include "broker/api/partition_checks.h"
#include "broker/base/kafka_error.h"

namespace headrace::broker {
namespace {

using Response = protocol::ListOffsetsResponse;
using PartitionResponse = Response::ListOffsetsPartitionResponse;

constexpr int64_t kLatestTiered = -5;
// The longest a partition waits for its HW to reach the LEO of the arrival
// (docs/durability.md): a group commit takes milliseconds, a follower's
// fetch round trip less.
constexpr std::chrono::milliseconds kHwWaitMs{1000};
using Reply = ParkedReply<Response>;

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

// Whether the answer for `timestamp` is bounded by the HW (all but the
// earliest ones and the tiered one).
bool BoundedByHighWatermark(int64_t timestamp) {
  return timestamp != kListOffsetsEarliest && timestamp != kListOffsetsEarliestLocal &&
         timestamp != kLatestTiered;
}

// Answers `in` now, or once the HW reaches the LEO of this moment (the head
// comment). `out` points into reply->resp.
void ListOrPark(BrokerContext& ctx, const std::shared_ptr<Reply>& reply,
                std::shared_ptr<Partition> partition,
                const protocol::ListOffsetsRequest::ListOffsetsPartition& in,
                IsolationLevel isolation, PartitionResponse* out) {
  const uint64_t state = partition->state_version();
  const Offset leo = partition->log_end_offset();
  if (!BoundedByHighWatermark(in.timestamp) || partition->high_watermark() >= leo ||
      partition->offline()) {
    return ListOne(*partition, in, isolation, out);
  }
  ParkOnHighWatermark(ctx.state->purgatory(), reply, partition, leo, state,
                      Purgatory::Clock::now() + kHwWaitMs,
                      [partition, in, isolation, out](WakeReason) {
                        if (!partition->is_leader()) return SetError(out, KafkaError::kNotLeaderOrFollower);
                        ListOne(*partition, in, isolation, out);
                      });
}

void HandleListOffsets(BrokerContext& ctx, protocol::ListOffsetsRequest& request, Request req) {
  const IsolationLevel isolation = ToIsolationLevel(request.isolation_level);
  std::set<std::pair<std::string, int32_t>> seen, duplicates;
  for (const auto& t : request.topics)
    for (const auto& p : t.partitions)
      if (!seen.emplace(t.name, p.partition_index).second) duplicates.emplace(t.name, p.partition_index);

  auto reply = std::make_shared<Reply>(std::move(req));
  Response& resp = reply->resp;
  resp.topics.resize(request.topics.size());  // sized first: parked waits hold pointers into it
  for (size_t t = 0; t < request.topics.size(); ++t) {
    resp.topics[t].partitions.resize(request.topics[t].partitions.size());
  }
  for (size_t ti = 0; ti < request.topics.size(); ++ti) {
    const auto& t = request.topics[ti];
    auto& topic_resp = resp.topics[ti];
    topic_resp.name = t.name;
    std::shared_ptr<const Topic> topic = ctx.topics().FindTopic(t.name);
    const bool described = AuthorizedOnTopic(ctx, reply->req, AclOperation::kDescribe, t.name);
    for (size_t pi = 0; pi < t.partitions.size(); ++pi) {
      const auto& p = t.partitions[pi];
      PartitionResponse& out = topic_resp.partitions[pi];
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
        ListOrPark(ctx, reply, topic->partitions[p.partition_index], p, isolation, &out);
      }
    }
  }
  reply->Release();
}

}  // namespace

extern const ApiHandler kListOffsetsHandler =
    MakeHandler<protocol::ListOffsetsRequest, HandleListOffsets>(1, 9);

}  // namespace headrace::broker
