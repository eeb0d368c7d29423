// Where Produce and Fetch meet client quotas (broker/security/quota/quota_manager.h;
// docs/security.md "Quotas"), as Kafka's KafkaApis does:
//   Produce: the request's size counts against producer_byte_rate; over it,
//     the answer (or, with acks=0, the silence) carries the throttle.
//   Fetch (consumers, not followers): max_bytes is capped at what the quota
//     allows in its windows; the answer's record bytes count against
//     consumer_byte_rate; a throttled fetch (bytes or request time) answers
//     with no records and its bytes are taken back.
// Each is one atomic load when no quota of its kind is configured.
#pragma once

#include <cstdint>

#include "broker/api/handler.h"

namespace headrace::broker {

void ThrottleProduce(BrokerContext& ctx, Request& req);

// The fetch's max_bytes under the consumer's quota.
int32_t CapFetchMaxBytes(BrokerContext& ctx, const Request& req, int32_t max_bytes);

// Records `bytes` of an answer to a consumer; true when the answer must be
// sent without records (throttled). `req` gets the throttle.
bool ThrottleFetch(BrokerContext& ctx, Request& req, int64_t bytes);

}  // namespace headrace::broker
