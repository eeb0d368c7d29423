// ReadShareGroupStateSummary (key 87), v0 (KIP-932): the StateEpoch and
// StartOffset of stored share-partition states, without their batches
// (DescribeShareGroupOffsets), from this broker's share coordinator of each
// key (ShareCoordinator::Read). Nothing is written.
//   - CLUSTER_ACTION on the CLUSTER, else every partition answers
//     CLUSTER_AUTHORIZATION_FAILED; per partition INVALID_REQUEST (empty
//     group, negative partition), COORDINATOR_NOT_AVAILABLE,
//     NOT_COORDINATOR, UNKNOWN_TOPIC_OR_PARTITION (api/share_state_rpc.h);
//   - a share-partition never initialized (or deleted) is no error, as in
//     Kafka's ShareCoordinatorShard.readStateSummary: StartOffset -1 (not
//     initialized) and StateEpoch 0;
//   - LeaderEpoch is not checked (as Kafka: the summary fences nobody);
//   - answered once the coordinators' logs are committed up to their end
//     at the read; if that fails, the partitions without an error answer
//     REQUEST_TIMED_OUT or KAFKA_STORAGE_ERROR.
#include <vector>

#include "broker/api/share_state_rpc.h"

namespace headrace::broker {
namespace {

using Req = protocol::ReadShareGroupStateSummaryRequest;
using Resp = protocol::ReadShareGroupStateSummaryResponse;

void HandleReadShareGroupStateSummary(BrokerContext& ctx, Req& request, Request req) {
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
      out.state_epoch = stored ? stored->state_epoch : 0;
      out.start_offset = stored ? stored->start_offset : -1;
    }
  }
  ReplyWhenLogsCommitted(ctx, std::move(reads), std::move(req), std::move(resp),
                         share_rpc::FailUnanswered<Resp>);
}

}  // namespace

extern const ApiHandler kReadShareGroupStateSummaryHandler =
    MakeHandler<Req, HandleReadShareGroupStateSummary>(0, 0);

}  // namespace headrace::broker
