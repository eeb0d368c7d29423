// DeleteShareGroupState (key 86), v0 (KIP-932): the stored states of the
// listed share-partitions of a group are deleted (tombstones in the share
// coordinators' logs, ShareCoordinator::Delete: one tombstone per
// share-partition). A share-partition with no stored state is no error and writes
// nothing, as Kafka.
//   - CLUSTER_ACTION on the CLUSTER, else every partition answers
//     CLUSTER_AUTHORIZATION_FAILED; per partition INVALID_REQUEST (empty
//     group, negative partition), COORDINATOR_NOT_AVAILABLE,
//     NOT_COORDINATOR, UNKNOWN_TOPIC_OR_PARTITION (api/share_state_rpc.h);
//   - NOT_COORDINATOR for every partition of a coordinator that stopped or
//     could not append;
//   - answered once the tombstones are committed in the coordinators' logs;
//     if that fails, the partitions without an error answer
//     REQUEST_TIMED_OUT or KAFKA_STORAGE_ERROR.
// The share-partitions this broker may lead are left alone: their leader's
// next read finds no state.
#include <memory>
#include <vector>

#include "broker/api/share_state_rpc.h"

namespace headrace::broker {
namespace {

using Req = protocol::DeleteShareGroupStateRequest;
using Resp = protocol::DeleteShareGroupStateResponse;

void HandleDeleteShareGroupState(BrokerContext& ctx, Req& request, Request req) {
  share_rpc::AnswerEachPartition<Resp>(
      ctx, request, std::move(req),
      [](const auto&, auto& out, share_rpc::Target& target, std::vector<LogCommitPoint>* points) {
        share_rpc::AddChange(points, out, *target.coordinator,
                             target.coordinator->Delete({target.key}));
      });
}

}  // namespace

extern const ApiHandler kDeleteShareGroupStateHandler =
    MakeHandler<Req, HandleDeleteShareGroupState>(0, 0);

}  // namespace headrace::broker
