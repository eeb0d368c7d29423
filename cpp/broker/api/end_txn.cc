// EndTxn (key 26), v0-3: commit or abort the producer's open transaction.
// Answered once the decision (PrepareCommit / PrepareAbort) is durable in the
// coordinator's log; the markers are written after that
// (txn/txn_coordinator.h).
#include "broker/api/txn_api.h"

namespace headrace::broker {
namespace {

void HandleEndTxn(BrokerContext& ctx, protocol::EndTxnRequest& request, Request req) {
  std::shared_ptr<txn::TxnCoordinator> coordinator = ctx.txn_coordinator();
  if (!AuthorizedOnTxnId(ctx, req, AclOperation::kWrite, request.transactional_id)) {  // ACLs
    protocol::EndTxnResponse resp;
    resp.error_code = Code(KafkaError::kTransactionalIdAuthorizationFailed);
    req.Reply(resp);
    return;
  }
  if (coordinator == nullptr) {
    protocol::EndTxnResponse resp;
    resp.error_code = Code(KafkaError::kNotCoordinator);
    req.Reply(resp);
    return;
  }
  coordinator->EndTxn(request.transactional_id, request.producer_id, request.producer_epoch,
                      request.committed, [req](KafkaError e) {
                        req.RunOnLoop([req, e] {
                          protocol::EndTxnResponse out;
                          out.error_code = Code(TxnErrorForVersion(e, req.version(), 2));
                          req.Reply(out);
                        });
                      });
}

}  // namespace

extern const ApiHandler kEndTxnHandler =
    MakeHandler<protocol::EndTxnRequest, HandleEndTxn>(0, 3);

}  // namespace headrace::broker
