// AddOffsetsToTxn (key 25), v0-3: adds the group's offsets partition
// (__consumer_offsets-0: headrace keeps every group in one partition) to the
// transaction, so that EndTxn's marker reaches the group coordinator and
// makes the producer's TxnOffsetCommit offsets visible (or drops them).
#include "broker/api/txn_api.h"

namespace headrace::broker {
namespace {

void HandleAddOffsetsToTxn(BrokerContext& ctx, protocol::AddOffsetsToTxnRequest& request,
                           Request req) {
  std::shared_ptr<txn::TxnCoordinator> coordinator = ctx.txn_coordinator();
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
  if (request.group_id.empty() || coordinator == nullptr) {
    resp.error_code = Code(request.group_id.empty() ? KafkaError::kInvalidGroupId
                                                    : KafkaError::kNotCoordinator);
    req.Reply(resp);
    return;
  }
  coordinator->AddPartitions(request.transactional_id, request.producer_id,
                             request.producer_epoch, {{kConsumerOffsetsTopic, 0}},
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
