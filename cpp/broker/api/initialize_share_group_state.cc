// InitializeShareGroupState (key 83), v0 (KIP-932): a share-partition's
// state starts over at StartOffset (-1: not yet known) with StateEpoch and
// no state batches, in this broker's share coordinator of the key
// (ShareCoordinator::Initialize; no leader epoch in the request: the stored
// one becomes -1, so any leader may write next).
//   - CLUSTER_ACTION on the CLUSTER, else every partition answers
//     CLUSTER_AUTHORIZATION_FAILED; per partition INVALID_REQUEST (empty
//     group, negative partition), COORDINATOR_NOT_AVAILABLE,
//     NOT_COORDINATOR, UNKNOWN_TOPIC_OR_PARTITION (api/share_state_rpc.h);
//   - FENCED_STATE_EPOCH when the stored state's epoch is not below
//     StateEpoch (a repeated initialization is fenced: the epoch must grow);
//     NOT_COORDINATOR when the coordinator stopped or could not append;
//   - answered once the new states are committed in the coordinators' logs;
//     if that fails, the partitions without an error answer
//     REQUEST_TIMED_OUT or KAFKA_STORAGE_ERROR.
#include <vector>

#include "broker/api/share_state_rpc.h"

namespace headrace::broker {
namespace {

using Req = protocol::InitializeShareGroupStateRequest;
using Resp = protocol::InitializeShareGroupStateResponse;

void HandleInitializeShareGroupState(BrokerContext& ctx, Req& request, Request req) {
  share_rpc::AnswerEachPartition<Resp>(
      ctx, request, std::move(req),
      [](const auto& p, auto& out, share_rpc::Target& target, std::vector<LogCommitPoint>* points) {
        share_rpc::AddChange(points, out, *target.coordinator,
                             target.coordinator->Initialize(target.key, p.state_epoch,
                                                            p.start_offset, /*leader_epoch=*/-1));
      });
}

}  // namespace

extern const ApiHandler kInitializeShareGroupStateHandler =
    MakeHandler<Req, HandleInitializeShareGroupState>(0, 0);

}  // namespace headrace::broker
