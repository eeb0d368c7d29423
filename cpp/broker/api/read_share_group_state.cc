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
  share_rpc::AnswerEachPartition<Resp>(
      ctx, request, std::move(req),
      [](const auto& p, auto& out, share_rpc::Target& target, std::vector<LogCommitPoint>* points) {
        std::optional<share::ShareState> stored = target.coordinator->Read(target.key);
        share_rpc::AddReadPoint(points, target.coordinator);
        if (!stored) {
          return share_rpc::SetError(
              out, KafkaError::kInvalidRequest,
              "Read operation on uninitialized share partition not allowed.");
        }
        if (p.leader_epoch != -1 && p.leader_epoch < stored->leader_epoch) {
          return share_rpc::SetError(out, KafkaError::kFencedLeaderEpoch);
        }
        out.state_epoch = stored->state_epoch;
        out.start_offset = stored->start_offset;
        out.state_batches.reserve(stored->batches.size());
        for (const share::StateBatch& b : stored->batches) {
          out.state_batches.push_back(
              {b.first, b.last, static_cast<int8_t>(b.state), b.delivery_count});
        }
      });
}

}  // namespace

extern const ApiHandler kReadShareGroupStateHandler =
    MakeHandler<Req, HandleReadShareGroupState>(0, 0);

}  // namespace headrace::broker
