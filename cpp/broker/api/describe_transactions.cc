// DescribeTransactions (key 65), v0: per transactional id its state,
// timeout, start time, producer id and epoch, and the partitions of the open
// transaction; TRANSACTIONAL_ID_NOT_FOUND for an unknown id,
// NOT_COORDINATOR when another broker leads the id's partition of
// __transaction_state (each id answered by its own partition's coordinator,
// coordinator/txn/txn_coordinators.h).
#include <map>

#include "broker/api/txn_api.h"

namespace headrace::broker {
namespace {

using Resp = protocol::DescribeTransactionsResponse;

void HandleDescribeTransactions(BrokerContext& ctx,
                                protocol::DescribeTransactionsRequest& request, Request req) {
  Resp resp;
  for (const std::string& id : request.transactional_ids) {
    Resp::TransactionState out;
    out.transactional_id = id;
    out.producer_id = -1;
    out.producer_epoch = -1;
    out.transaction_start_time_ms = -1;
    if (!AuthorizedOnTxnId(ctx, req, AclOperation::kDescribe, id)) {  // ACLs
      out.error_code = Code(KafkaError::kTransactionalIdAuthorizationFailed);
      resp.transaction_states.push_back(std::move(out));
      continue;
    }
    const txn::TxnCoordinatorLookup found = TxnCoordinatorFor(ctx, id);
    if (found.coordinator == nullptr) {
      out.error_code = Code(found.error);
      resp.transaction_states.push_back(std::move(out));
      continue;
    }
    txn::TxnDescription d = found.coordinator->Describe(id);
    out.error_code = Code(d.error);
    if (d.error == KafkaError::kNone) {
      const txn::TxnMetadata& m = d.metadata;
      out.transaction_state = txn::TxnStateName(m.state);
      out.transaction_timeout_ms = m.timeout_ms;
      out.transaction_start_time_ms = m.start_ms;
      out.producer_id = m.producer_id;
      out.producer_epoch = m.producer_epoch;
      std::map<std::string, std::vector<int32_t>> by_topic;
      for (const auto& [topic, p] : m.partitions) by_topic[topic].push_back(p);
      for (auto& [topic, ps] : by_topic) {
        // ACLs: only the topics the client may DESCRIBE (as Kafka).
        if (!AuthorizedOnTopic(ctx, req, AclOperation::kDescribe, topic)) continue;
        out.topics.push_back({topic, std::move(ps)});
      }
    }
    resp.transaction_states.push_back(std::move(out));
  }
  req.Reply(resp);
}

}  // namespace

extern const ApiHandler kDescribeTransactionsHandler =
    MakeHandler<protocol::DescribeTransactionsRequest, HandleDescribeTransactions>(0, 0);

}  // namespace headrace::broker
