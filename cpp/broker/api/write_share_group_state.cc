// WriteShareGroupState (key 85), v0 (KIP-932): a share-partition leader
// writes its share-partitions' progress to this broker's share coordinator
// of each key (ShareCoordinator::Write): StartOffset (-1: unchanged) and
// StateBatches laid over the stored batches (MergeStateBatches), with its
// StateEpoch and LeaderEpoch.
//   - CLUSTER_ACTION on the CLUSTER, else every partition answers
//     CLUSTER_AUTHORIZATION_FAILED; per partition INVALID_REQUEST (empty
//     group, negative partition), COORDINATOR_NOT_AVAILABLE,
//     NOT_COORDINATOR, UNKNOWN_TOPIC_OR_PARTITION (api/share_state_rpc.h);
//   - INVALID_REQUEST for malformed StateBatches (nothing of the partition
//     is written): a negative FirstOffset or DeliveryCount, FirstOffset
//     above LastOffset, a DeliveryState other than 0 (available), 2
//     (acknowledged) or 4 (archived), batches not sorted or overlapping;
//   - INVALID_REQUEST for a share-partition never initialized, as Kafka
//     ("Write operation on uninitialized share partition not allowed.":
//     InitializeShareGroupState comes first);
//   - FENCED_STATE_EPOCH when StateEpoch is not the stored one,
//     FENCED_LEADER_EPOCH when LeaderEpoch is below the stored one;
//     NOT_COORDINATOR when the coordinator stopped or could not append;
//   - answered once the written states are committed in the coordinators'
//     logs; if that fails, the partitions without an error answer
//     REQUEST_TIMED_OUT or KAFKA_STORAGE_ERROR.
#include <optional>
#include <string>
#include <vector>

#include "broker/api/share_state_rpc.h"

namespace headrace::broker {
namespace {

using Req = protocol::WriteShareGroupStateRequest;
using Resp = protocol::WriteShareGroupStateResponse;

// Why `batches` cannot be stored, or nullopt.
std::optional<std::string> MalformedBatches(const std::vector<Req::StateBatch>& batches) {
  for (size_t i = 0; i < batches.size(); ++i) {
    const Req::StateBatch& b = batches[i];
    if (b.first_offset < 0 || b.first_offset > b.last_offset) {
      return "State batch " + std::to_string(i) + " has an invalid offset range.";
    }
    const auto state = static_cast<share::RecordState>(b.delivery_state);
    if (state != share::RecordState::kAvailable && state != share::RecordState::kAcknowledged &&
        state != share::RecordState::kArchived) {
      return "State batch " + std::to_string(i) + " has an invalid delivery state.";
    }
    if (b.delivery_count < 0) {
      return "State batch " + std::to_string(i) + " has a negative delivery count.";
    }
    if (i > 0 && b.first_offset <= batches[i - 1].last_offset) {
      return "State batches must be sorted and must not overlap.";
    }
  }
  return std::nullopt;
}

void HandleWriteShareGroupState(BrokerContext& ctx, Req& request, Request req) {
  share_rpc::AnswerEachPartition<Resp>(
      ctx, request, std::move(req),
      [](const auto& p, auto& out, share_rpc::Target& target, std::vector<LogCommitPoint>* points) {
        if (std::optional<std::string> why = MalformedBatches(p.state_batches)) {
          return share_rpc::SetError(out, KafkaError::kInvalidRequest, std::move(why));
        }
        share::ShareState write;
        write.state_epoch = p.state_epoch;
        write.leader_epoch = p.leader_epoch;
        write.start_offset = p.start_offset;
        write.batches.reserve(p.state_batches.size());
        for (const Req::StateBatch& b : p.state_batches) {
          write.batches.push_back({b.first_offset, b.last_offset,
                                   static_cast<share::RecordState>(b.delivery_state),
                                   b.delivery_count});
        }
        share::SharePersisted done =
            target.coordinator->Write(target.key, write, /*require_initialized=*/true);
        if (done.error == KafkaError::kInvalidRequest) {
          return share_rpc::SetError(
              out, done.error, "Write operation on uninitialized share partition not allowed.");
        }
        share_rpc::AddChange(points, out, *target.coordinator, done);
      });
}

}  // namespace

extern const ApiHandler kWriteShareGroupStateHandler =
    MakeHandler<Req, HandleWriteShareGroupState>(0, 0);

}  // namespace headrace::broker
