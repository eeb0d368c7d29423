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
  share_rpc::AnswerEachPartition<Resp>(
      ctx, request, std::move(req),
      [](const auto&, auto& out, share_rpc::Target& target, std::vector<LogCommitPoint>* points) {
        std::optional<share::ShareState> stored = target.coordinator->Read(target.key);
        share_rpc::AddReadPoint(points, target.coordinator);
        out.state_epoch = stored ? stored->state_epoch : 0;
        out.start_offset = stored ? stored->start_offset : -1;
      });
}

}  // namespace

extern const ApiHandler kReadShareGroupStateSummaryHandler =
    MakeHandler<Req, HandleReadShareGroupStateSummary>(0, 0);

}  // namespace headrace::broker
