// AddOffsetsToTxn (key 25), v0-3: adds the group's offsets partition
// (__consumer_offsets-N, N = the group's partition, coordinator/base/group_partition.h;
// 0 on a single node) to the transaction, so that EndTxn's marker reaches
// the group's coordinator and makes the producer's TxnOffsetCommit offsets
// visible (or drops them). Answered by the transactional id's coordinator
// (coordinator/txn/txn_coordinators.h). COORDINATOR_NOT_AVAILABLE (retriable) while
// __consumer_offsets does not exist yet in a cluster.
#include "broker/api/txn_api.h"
#include "broker/coordinator/group/group_coordinators.h"

namespace headrace::broker {
namespace {

void HandleAddOffsetsToTxn(BrokerContext& ctx, protocol::AddOffsetsToTxnRequest& request,
                           Request req) {
  protocol::AddOffsetsToTxnResponse resp;
  // ACLs: WRITE on the transactional id, READ on the group.
  if (!AuthorizedOnTxnId(ctx, req, AclOperation::kWrite, request.transactional_id)) {
    resp.error_code = Code(KafkaError::kTransactionalIdAuthorizationFailed);
    req.Reply(resp);
    return;
  }
  if (!AuthorizedOnGroup(ctx, req, AclOperation::kRead, request.group_id)) {
    resp.error_code = Code(KafkaError::kGroupAuthorizationFailed);
    req.Reply(resp);
    return;
  }
  const txn::TxnCoordinatorLookup found = TxnCoordinatorFor(ctx, request.transactional_id);
  if (request.group_id.empty() || found.coordinator == nullptr) {
    resp.error_code = Code(request.group_id.empty() ? KafkaError::kInvalidGroupId : found.error);
    req.Reply(resp);
    return;
  }
  const std::shared_ptr<txn::TxnCoordinator>& coordinator = found.coordinator;
  const int32_t partition =
      ctx.group_coordinators ? ctx.group_coordinators->PartitionFor(request.group_id) : -1;
  if (partition < 0) {
    resp.error_code = Code(KafkaError::kCoordinatorNotAvailable);
    req.Reply(resp);
    return;
  }
  coordinator->AddPartitions(request.transactional_id, request.producer_id,
                             request.producer_epoch, {{kConsumerOffsetsTopic, partition}},
                             [req](KafkaError e) {
                               req.RunOnLoop([req, e] {
                                 protocol::AddOffsetsToTxnResponse out;
                                 out.error_code = Code(TxnErrorForVersion(e, req.version(), 2));
                                 req.Reply(out);
                               });
                             });
}

}  // namespace

extern const ApiHandler kAddOffsetsToTxnHandler =
    MakeHandler<protocol::AddOffsetsToTxnRequest, HandleAddOffsetsToTxn>(0, 3);

}  // namespace headrace::broker
