// EndTxn (key 26), v0-3: commit or abort the producer's open transaction.
// Answered once the decision (PrepareCommit / PrepareAbort) is durable in the
// log of the transactional id's coordinator (coordinator/txn/txn_coordinators.h;
// NOT_COORDINATOR when another broker leads the id's partition); the
// markers are written after that (coordinator/txn/txn_coordinator.h).
#include "broker/api/txn_api.h"

namespace headrace::broker {
namespace {

void HandleEndTxn(BrokerContext& ctx, protocol::EndTxnRequest& request, Request req) {
  if (!AuthorizedOnTxnId(ctx, req, AclOperation::kWrite, request.transactional_id)) {  // ACLs
    protocol::EndTxnResponse resp;
    resp.error_code = Code(KafkaError::kTransactionalIdAuthorizationFailed);
    req.Reply(resp);
    return;
  }
  const txn::TxnCoordinatorLookup found = TxnCoordinatorFor(ctx, request.transactional_id);
  if (found.coordinator == nullptr) {
    protocol::EndTxnResponse resp;
    resp.error_code = Code(found.error);
    req.Reply(resp);
    return;
  }
  found.coordinator->EndTxn(request.transactional_id, request.producer_id, request.producer_epoch,
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
