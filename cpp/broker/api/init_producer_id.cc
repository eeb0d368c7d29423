// InitProducerId (key 22), v0-5.
// Without a transactional id (idempotent producers): a new broker-wide
// producer id with epoch 0 (BrokerState::producer_ids(), persisted in blocks
// so ids are never reused across restarts); from v3 (KIP-360) a producer may
// present its current id and epoch: when they are the ones this broker
// handed out, the epoch is bumped instead; otherwise it gets a new id.
// With a transactional id: the coordinator of the id's partition of
// __transaction_state answers (coordinator/txn/txn_coordinators.h; NOT_COORDINATOR when
// another broker leads it); an empty id is INVALID_REQUEST, as in Kafka.
#include "broker/api/txn_api.h"
#include "broker/base/kafka_error.h"

namespace headrace::broker {
namespace {

// The first InitProducerId version carrying the producer's id and epoch.
constexpr int16_t kFirstEpochBumpVersion = 3;

void HandleInitProducerId(BrokerContext& ctx, protocol::InitProducerIdRequest& request,
                          Request req) {
  protocol::InitProducerIdResponse resp;
  resp.producer_id = -1;
  resp.producer_epoch = -1;
  // ACLs: WRITE on the transactional id; an idempotent producer needs
  // IDEMPOTENT_WRITE on the CLUSTER or WRITE on some topic (Kafka 3.x).
  if (request.transactional_id.has_value()
          ? !AuthorizedOnTxnId(ctx, req, AclOperation::kWrite, *request.transactional_id)
          : !AuthorizedOnCluster(ctx, req, AclOperation::kIdempotentWrite) &&
                !AuthorizedOnAny(ctx, req, AclOperation::kWrite, ResourceType::kTopic)) {
    resp.error_code = Code(request.transactional_id ? KafkaError::kTransactionalIdAuthorizationFailed
                                                    : KafkaError::kClusterAuthorizationFailed);
    req.Reply(resp);
    return;
  }
  if (request.transactional_id.has_value()) {
    if (request.transactional_id->empty()) {
      resp.error_code = Code(KafkaError::kInvalidRequest);
      req.Reply(resp);
      return;
    }
    const txn::TxnCoordinatorLookup found = TxnCoordinatorFor(ctx, *request.transactional_id);
    if (found.coordinator == nullptr) {
      resp.error_code = Code(found.error);
      req.Reply(resp);
      return;
    }
    const std::shared_ptr<txn::TxnCoordinator>& coordinator = found.coordinator;
    const int16_t version = req.version();
    const bool expects = version >= kFirstEpochBumpVersion;
    coordinator->InitProducerId(
        *request.transactional_id, request.transaction_timeout_ms,
        expects ? request.producer_id : -1, expects ? request.producer_epoch : int16_t{-1},
        [req, version](txn::InitProducerIdResult r) {
          req.RunOnLoop([req, version, r] {
            protocol::InitProducerIdResponse out;
            out.error_code = Code(TxnErrorForVersion(r.error, version, 4));
            out.producer_id = r.producer_id;
            out.producer_epoch = r.producer_epoch;
            req.Reply(out);
          });
        });
    return;
  }
  ProducerIdAllocator& ids = ctx.state->producer_ids();
  const bool bump = req.version() >= kFirstEpochBumpVersion && request.producer_id >= 0 &&
                    request.producer_epoch >= 0;
  Result<ProducerIdAndEpoch> got =
      bump ? ids.BumpOrAllocate({request.producer_id, request.producer_epoch}) : ids.Allocate();
  if (!got.ok()) {
    // Could not persist the id block: the retriable coordinator error makes
    // clients try again later.
    resp.error_code = Code(KafkaError::kCoordinatorNotAvailable);
    req.Reply(resp);
    return;
  }
  resp.error_code = Code(KafkaError::kNone);
  resp.producer_id = got->producer_id;
  resp.producer_epoch = got->epoch;
  req.Reply(resp);
}

}  // namespace

extern const ApiHandler kInitProducerIdHandler =
    MakeHandler<protocol::InitProducerIdRequest, HandleInitProducerId>(0, 5);

}  // namespace headrace::broker
