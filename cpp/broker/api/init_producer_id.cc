// InitProducerId (key 22), v0-5, for idempotent (non-transactional)
// producers: transactional_id null -> a new broker-wide producer id with
// epoch 0 (BrokerState::producer_ids(), persisted in blocks so ids are never
// reused across restarts). From v3 (KIP-360) a producer may present its
// current id and epoch: when they are the ones this broker handed out, the
// epoch is bumped instead; otherwise it gets a new id.
//
// Transactions do not exist yet. A non-null transactional id is answered
// with TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53): librdkafka and the Java
// client treat it as fatal for the transactional producer, so
// init_transactions() fails at once with our message instead of retrying
// forever, as they would for the retriable COORDINATOR_NOT_AVAILABLE /
// NOT_COORDINATOR. (UNSUPPORTED_VERSION would misname the problem: the API
// version is supported.) An empty transactional id is INVALID_REQUEST, as
// in Kafka.
#include "broker/api/handler.h"
#include "broker/kafka_error.h"

namespace headrace::broker {
namespace {

// The first InitProducerId version carrying the producer's id and epoch.
constexpr int16_t kFirstEpochBumpVersion = 3;

void HandleInitProducerId(BrokerContext& ctx, protocol::InitProducerIdRequest& request,
                          Request req) {
  protocol::InitProducerIdResponse resp;
  resp.producer_id = -1;
  resp.producer_epoch = -1;
  if (request.transactional_id.has_value()) {
    resp.error_code = Code(request.transactional_id->empty()
                               ? KafkaError::kInvalidRequest
                               : KafkaError::kTransactionalIdAuthorizationFailed);
    req.Reply(resp);
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
