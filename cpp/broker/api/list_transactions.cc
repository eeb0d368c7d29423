// ListTransactions (key 66), v0-1: the transactional ids of every
// transaction coordinator on this broker (cluster mode: one per
// __transaction_state partition led here; clients and `headrace txn list`
// ask every broker, as Kafka's tool does), filtered by state names (unknown names are echoed in
// unknown_state_filters), producer ids and (v1) how long the transaction
// has been open.
#include <map>

#include "broker/api/txn_api.h"

namespace headrace::broker {
namespace {

void HandleListTransactions(BrokerContext& ctx, protocol::ListTransactionsRequest& request,
                            Request req) {
  protocol::ListTransactionsResponse resp;
  const auto coordinators = ctx.txn_coordinators
                                ? ctx.txn_coordinators->All()
                                : std::map<int32_t, std::shared_ptr<txn::TxnCoordinator>>{};
  if (coordinators.empty()) {
    // A broker that coordinates nothing lists nothing (clients ask every broker).
    resp.error_code = Code(ctx.state->cluster() ? KafkaError::kNone
                                                : KafkaError::kCoordinatorNotAvailable);
    req.Reply(resp);
    return;
  }
  std::set<txn::TxnState> states;
  for (const std::string& name : request.state_filters) {
    if (auto s = txn::TxnStateFromName(name)) states.insert(*s);
    else resp.unknown_state_filters.push_back(name);
  }
  if (!request.state_filters.empty() && states.empty()) {
    req.Reply(resp);  // only unknown states asked for: nothing matches
    return;
  }
  std::set<int64_t> producer_ids(request.producer_id_filters.begin(),
                                 request.producer_id_filters.end());
  for (const auto& [partition, coordinator] : coordinators) {
    for (const txn::TxnListing& l :
         coordinator->List(states, producer_ids, request.duration_filter)) {
      // ACLs: only the transactional ids the client may DESCRIBE (no error).
      if (!AuthorizedOnTxnId(ctx, req, AclOperation::kDescribe, l.transactional_id)) continue;
      resp.transaction_states.push_back(
          {l.transactional_id, l.producer_id, txn::TxnStateName(l.state)});
    }
  }
  resp.error_code = Code(KafkaError::kNone);
  req.Reply(resp);
}

}  // namespace

extern const ApiHandler kListTransactionsHandler =
    MakeHandler<protocol::ListTransactionsRequest, HandleListTransactions>(0, 1);

}  // namespace headrace::broker
