// DeleteShareGroupState (key 86), v0 (KIP-932): the stored states of the
// listed share-partitions of a group are deleted (tombstones in the share
// coordinators' logs, ShareCoordinator::Delete: one batch per coordinator
// here). A share-partition with no stored state is no error and writes
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
#include <map>
#include <memory>
#include <vector>

#include "broker/api/share_state_rpc.h"

namespace headrace::broker {
namespace {

using Req = protocol::DeleteShareGroupStateRequest;
using Resp = protocol::DeleteShareGroupStateResponse;

void HandleDeleteShareGroupState(BrokerContext& ctx, Req& request, Request req) {
  Resp resp = share_rpc::MirrorRequest<Resp>(request);
  if (!share_rpc::AuthorizedForShareState(ctx, req)) {
    share_rpc::FailAll(resp, KafkaError::kClusterAuthorizationFailed);
    return req.Reply(resp);
  }
  // The keys of each coordinator here, and where their answers are.
  struct Batch {
    std::shared_ptr<share::ShareCoordinator> coordinator;
    std::vector<share::SharePartitionKey> keys;
    std::vector<Resp::PartitionResult*> results;
  };
  std::map<const share::ShareCoordinator*, Batch> batches;
  for (size_t i = 0; i < request.topics.size(); ++i) {
    const auto& t = request.topics[i];
    for (size_t j = 0; j < t.partitions.size(); ++j) {
      auto& out = resp.results[i].partitions[j];
      share_rpc::Target target = share_rpc::ResolveShareStateTarget(
          ctx, request.group_id, t.topic_id, t.partitions[j].partition);
      if (!target.coordinator) {
        share_rpc::SetError(out, target.error, std::move(target.message));
        continue;
      }
      Batch& b = batches[target.coordinator.get()];
      b.keys.push_back(std::move(target.key));
      b.results.push_back(&out);
      b.coordinator = std::move(target.coordinator);
    }
  }
  std::vector<LogCommitPoint> commits;
  for (auto& [ptr, b] : batches) {
    share::SharePersisted done = b.coordinator->Delete(b.keys);
    if (done.error != KafkaError::kNone) {
      for (Resp::PartitionResult* out : b.results) share_rpc::SetError(*out, done.error);
      continue;
    }
    share_rpc::AddCommitPoint(&commits, b.coordinator->log_partition(), Offset(done.end));
  }
  ReplyWhenLogsCommitted(ctx, std::move(commits), std::move(req), std::move(resp),
                         share_rpc::FailUnanswered<Resp>);
}

}  // namespace

extern const ApiHandler kDeleteShareGroupStateHandler =
    MakeHandler<Req, HandleDeleteShareGroupState>(0, 0);

}  // namespace headrace::broker
