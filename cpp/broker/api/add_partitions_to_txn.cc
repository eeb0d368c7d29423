// AddPartitionsToTxn (key 24), v0-3: the client versions (v4+ is the
// broker-to-broker verification of KIP-890, not served). Every partition
// must exist, else the unknown ones answer UNKNOWN_TOPIC_OR_PARTITION and
// the others OPERATION_NOT_ATTEMPTED, nothing being added (as Kafka does);
// otherwise the answer of the transactional id's coordinator
// (coordinator/txn/txn_coordinators.h; NOT_COORDINATOR when another broker leads the
// id's partition of __transaction_state) is given to every partition.
#include "broker/api/txn_api.h"

namespace headrace::broker {
namespace {

using Req = protocol::AddPartitionsToTxnRequest;
using Resp = protocol::AddPartitionsToTxnResponse;

// One result per requested partition, all `e` except the unknown ones when
// `unknown_only`.
Resp Answer(const BrokerContext& ctx, const Req& req, KafkaError e, bool check_unknown) {
  Resp resp;
  for (const auto& t : req.v3_and_below_topics) {
    Resp::AddPartitionsToTxnTopicResult tr;
    tr.name = t.name;
    for (int32_t p : t.partitions) {
      KafkaError pe = e;
      if (check_unknown && !TxnPartitionExists(ctx, t.name, p)) {
        pe = KafkaError::kUnknownTopicOrPartition;
      }
      tr.results_by_partition.push_back({p, Code(pe)});
    }
    resp.results_by_topic_v3_and_below.push_back(std::move(tr));
  }
  return resp;
}

// ACLs: WRITE on the transactional id (else every partition
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then WRITE on each topic (else
// TOPIC_AUTHORIZATION_FAILED, the others OPERATION_NOT_ATTEMPTED).
bool Refused(const BrokerContext& ctx, const Req& request, const Request& req, Resp* out) {
  if (!AuthorizedOnTxnId(ctx, req, AclOperation::kWrite, request.v3_and_below_transactional_id)) {
    *out = Answer(ctx, request, KafkaError::kTransactionalIdAuthorizationFailed, false);
    return true;
  }
  bool denied = false;
  for (const auto& t : request.v3_and_below_topics)
    denied = denied || !AuthorizedOnTopic(ctx, req, AclOperation::kWrite, t.name);
  if (!denied) return false;
  *out = Answer(ctx, request, KafkaError::kOperationNotAttempted, false);
  for (auto& t : out->results_by_topic_v3_and_below) {
    if (AuthorizedOnTopic(ctx, req, AclOperation::kWrite, t.name)) continue;
    for (auto& p : t.results_by_partition) p.partition_error_code = Code(KafkaError::kTopicAuthorizationFailed);
  }
  return true;
}

void HandleAddPartitionsToTxn(BrokerContext& ctx, Req& request, Request req) {
  if (Resp refused; Refused(ctx, request, req, &refused)) {
    req.Reply(refused);
    return;
  }
  std::vector<txn::TxnPartition> partitions;
  bool unknown = false;
  for (const auto& t : request.v3_and_below_topics) {
    for (int32_t p : t.partitions) {
      partitions.push_back({t.name, p});
      unknown = unknown || !TxnPartitionExists(ctx, t.name, p);
    }
  }
  if (unknown) {
    req.Reply(Answer(ctx, request, KafkaError::kOperationNotAttempted, true));
    return;
  }
  const txn::TxnCoordinatorLookup found =
      TxnCoordinatorFor(ctx, request.v3_and_below_transactional_id);
  if (found.coordinator == nullptr) {
    req.Reply(Answer(ctx, request, found.error, false));
    return;
  }
  const std::shared_ptr<txn::TxnCoordinator>& coordinator = found.coordinator;
  auto shared = std::make_shared<Req>(std::move(request));
  coordinator->AddPartitions(
      shared->v3_and_below_transactional_id, shared->v3_and_below_producer_id,
      shared->v3_and_below_producer_epoch, partitions, [&ctx, req, shared](KafkaError e) {
        req.RunOnLoop([&ctx, req, shared, e] {
          req.Reply(Answer(ctx, *shared, TxnErrorForVersion(e, req.version(), 2), false));
        });
      });
}

}  // namespace

extern const ApiHandler kAddPartitionsToTxnHandler =
    MakeHandler<protocol::AddPartitionsToTxnRequest, HandleAddPartitionsToTxn>(0, 3);

}  // namespace headrace::broker
