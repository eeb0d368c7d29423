// DeleteRecords (key 21), v0..2: moves partitions' log start offset
// forward, making the records before it unreadable (whole segments below
// it are removed). Per partition:
//   offset -1                     the high watermark (delete everything)
//   offset in (HW, LEO]           waits in the purgatory until the HW passes
//                                 it (an acknowledged acks=1 record whose
//                                 fsync or follower fetch is pending), as
//                                 Kafka's DelayedDeleteRecords; at most the
//                                 request's timeout_ms: REQUEST_TIMED_OUT;
//                                 NOT_LEADER_OR_FOLLOWER if leadership is
//                                 lost meanwhile
//   offset < -1 or > LEO          OFFSET_OUT_OF_RANGE
//   offset <= current log start   nothing changes
//   not the leader (cluster)      NOT_LEADER_OR_FOLLOWER
//   unknown topic or partition    UNKNOWN_TOPIC_OR_PARTITION
// low_watermark is the leader's log start offset afterwards (-1 on error).
#include <algorithm>
#include <chrono>
#include <memory>
#include <string>

#include "broker/api/authorize.h"
#include "broker/api/handler.h"
#include "broker/api/hw_park.h"
#include "broker/base/kafka_error.h"
#include "broker/partition/topic_name.h"

namespace headrace::broker {
namespace {

using Req = protocol::DeleteRecordsRequest;
using Resp = protocol::DeleteRecordsResponse;

using Result_ = Resp::DeleteRecordsPartitionResult;
using Reply_ = ParkedReply<Resp>;

void SetError(Result_* r, KafkaError e) {
  r->error_code = Code(e);
  r->low_watermark = -1;
}

// Deletes before `offset` now if the HW allows it; else parks until it does
// (the head comment). `out` points into reply->resp.
void DeleteOrPark(BrokerContext& ctx, const std::shared_ptr<Reply_>& reply,
                  std::shared_ptr<Partition> partition, Offset offset,
                  Purgatory::Clock::time_point deadline, Result_* out) {
  if (partition->offline()) return SetError(out, KafkaError::kKafkaStorageError);
  if (!partition->is_leader()) return SetError(out, KafkaError::kNotLeaderOrFollower);
  const uint64_t state = partition->state_version();
  if (offset > partition->high_watermark() && offset <= partition->log_end_offset()) {
    ParkOnHighWatermark(
        ctx.state->purgatory(), reply, partition, offset, state, deadline,
        [&ctx, reply, partition, offset, deadline, out](WakeReason why) {
          if (partition->high_watermark() < offset) {
            if (why == WakeReason::kDeadline) return SetError(out, KafkaError::kRequestTimedOut);
            if (why == WakeReason::kShutdown) return SetError(out, KafkaError::kNotLeaderOrFollower);
          }
          // Reached, or a state change: decide again (a still-leading
          // partition whose HW is short parks again until the deadline).
          DeleteOrPark(ctx, reply, partition, offset, deadline, out);
        });
    return;
  }
  Result<Offset> start = partition->DeleteRecordsBefore(offset);
  if (!start.ok()) return SetError(out, ToKafkaError(start.status()));
  out->error_code = Code(KafkaError::kNone);
  out->low_watermark = start->value();
}

// The checks before any deletion; null (and `out` filled) when refused.
std::shared_ptr<Partition> Admit(BrokerContext& ctx, const Request& req, const std::string& topic,
                                 const Req::DeleteRecordsPartition& p, Result_* out) {
  if (!AuthorizedOnTopic(ctx, req, AclOperation::kDelete, topic)) {  // ACLs
    SetError(out, KafkaError::kTopicAuthorizationFailed);
    return nullptr;
  }
  if (Status internal = CheckClientOpOnInternalTopic(topic, InternalTopicOp::kDeleteRecords);
      !internal.ok()) {
    SetError(out, ToKafkaError(internal));
    return nullptr;
  }
  Result<std::shared_ptr<Partition>> partition = ctx.topics().GetPartition(topic, p.partition_index);
  if (!partition.ok()) {
    SetError(out, ToKafkaError(partition.status()));
    return nullptr;
  }
  return *partition;
}

void HandleDeleteRecords(BrokerContext& ctx, Req& req, Request request) {
  auto reply = std::make_shared<Reply_>(std::move(request));
  const auto deadline =
      Purgatory::Clock::now() + std::chrono::milliseconds(std::max(req.timeout_ms, 0));
  Resp& resp = reply->resp;
  resp.topics.resize(req.topics.size());  // sized first: parked waits hold pointers into it
  for (size_t t = 0; t < req.topics.size(); ++t) {
    resp.topics[t].name = req.topics[t].name;
    resp.topics[t].partitions.resize(req.topics[t].partitions.size());
  }
  for (size_t t = 0; t < req.topics.size(); ++t) {
    for (size_t i = 0; i < req.topics[t].partitions.size(); ++i) {
      const auto& p = req.topics[t].partitions[i];
      Result_* out = &resp.topics[t].partitions[i];
      out->partition_index = p.partition_index;
      std::shared_ptr<Partition> partition = Admit(ctx, reply->req, req.topics[t].name, p, out);
      if (partition) DeleteOrPark(ctx, reply, std::move(partition), Offset(p.offset), deadline, out);
    }
  }
  reply->Release();
}

}  // namespace

extern const ApiHandler kDeleteRecordsHandler =
    MakeHandler<protocol::DeleteRecordsRequest, HandleDeleteRecords>(0, 2);

}  // namespace headrace::broker
