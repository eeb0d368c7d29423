// ReadShareGroupState (key 84), v0 (KIP-932): a share-partition leader
// reads the stored state of its share-partitions (StateEpoch, StartOffset,
// StateBatches with DeliveryState 0 available / 2 acknowledged / 4
// archived and DeliveryCount) from this broker's share coordinator of each
// key (ShareCoordinator::Read). Nothing is written.
//   - CLUSTER_ACTION on the CLUSTER, else every partition answers
//     CLUSTER_AUTHORIZATION_FAILED; per partition INVALID_REQUEST (empty
//     group, negative partition), COORDINATOR_NOT_AVAILABLE,
//     NOT_COORDINATOR, UNKNOWN_TOPIC_OR_PARTITION (api/share_state_rpc.h);
//   - a share-partition never initialized (or deleted): INVALID_REQUEST,
//     "Read operation on uninitialized share partition not allowed.", as
//     Kafka's ShareCoordinatorShard (READ_UNINITIALIZED_SHARE_PARTITION;
//     the group coordinator initializes share-partitions before their
//     leaders read them). UNKNOWN_TOPIC_OR_PARTITION is kept for a topic
//     partition that does not exist, as Kafka;
//   - FENCED_LEADER_EPOCH when LeaderEpoch is below the stored state's
//     leader epoch (-1: not given, never fenced). Unlike Kafka, a higher
//     LeaderEpoch is not recorded by the read (the next write records it);
//   - answered once the coordinators' logs are committed up to their end
//     at the read (the state read is durable); if that fails, the
//     partitions without an error answer REQUEST_TIMED_OUT or
//     KAFKA_STORAGE_ERROR.
#include <vector>

#include "broker/api/share_state_rpc.h"

namespace headrace::broker {
namespace {

using Req = protocol::ReadShareGroupStateRequest;
using Resp = protocol::ReadShareGroupStateResponse;

void HandleReadShareGroupState(BrokerContext& ctx, Req& request, Request req) {
  Resp resp = share_rpc::MirrorRequest<Resp>(request);
  if (!share_rpc::AuthorizedForShareState(ctx, req)) {
    share_rpc::FailAll(resp, KafkaError::kClusterAuthorizationFailed);
    return req.Reply(resp);
  }
  std::vector<LogCommitPoint> reads;
  for (size_t i = 0; i < request.topics.size(); ++i) {
    const auto& t = request.topics[i];
    for (size_t j = 0; j < t.partitions.size(); ++j) {
      const auto& p = t.partitions[j];
      auto& out = resp.results[i].partitions[j];
      share_rpc::Target target =
          share_rpc::ResolveShareStateTarget(ctx, request.group_id, t.topic_id, p.partition);
      if (!target.coordinator) {
        share_rpc::SetError(out, target.error, std::move(target.message));
        continue;
      }
      std::optional<share::ShareState> stored = target.coordinator->Read(target.key);
      share_rpc::AddReadPoint(&reads, target.coordinator);
      if (!stored) {
        share_rpc::SetError(out, KafkaError::kInvalidRequest,
                            "Read operation on uninitialized share partition not allowed.");
        continue;
      }
      if (p.leader_epoch != -1 && p.leader_epoch < stored->leader_epoch) {
        share_rpc::SetError(out, KafkaError::kFencedLeaderEpoch);
        continue;
      }
      out.state_epoch = stored->state_epoch;
      out.start_offset = stored->start_offset;
      out.state_batches.reserve(stored->batches.size());
      for (const share::StateBatch& b : stored->batches) {
        out.state_batches.push_back(
            {b.first, b.last, static_cast<int8_t>(b.state), b.delivery_count});
      }
    }
  }
  ReplyWhenLogsCommitted(ctx, std::move(reads), std::move(req), std::move(resp),
                         share_rpc::FailUnanswered<Resp>);
}

}  // namespace

extern const ApiHandler kReadShareGroupStateHandler =
    MakeHandler<Req, HandleReadShareGroupState>(0, 0);

}  // namespace headrace::broker
