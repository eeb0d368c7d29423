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
  Resp resp = share_rpc::MirrorRequest<Resp>(request);
  if (!share_rpc::AuthorizedForShareState(ctx, req)) {
    share_rpc::FailAll(resp, KafkaError::kClusterAuthorizationFailed);
    return req.Reply(resp);
  }
  std::vector<LogCommitPoint> commits;
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
      share::SharePersisted done = target.coordinator->Initialize(
          target.key, p.state_epoch, p.start_offset, /*leader_epoch=*/-1);
      if (done.error != KafkaError::kNone) {
        share_rpc::SetError(out, done.error);
        continue;
      }
      share_rpc::AddCommitPoint(&commits, target.coordinator->log_partition(), Offset(done.end));
    }
  }
  ReplyWhenLogsCommitted(ctx, std::move(commits), std::move(req), std::move(resp),
                         share_rpc::FailUnanswered<Resp>);
}

}  // namespace

extern const ApiHandler kInitializeShareGroupStateHandler =
    MakeHandler<Req, HandleInitializeShareGroupState>(0, 0);

}  // namespace headrace::broker
