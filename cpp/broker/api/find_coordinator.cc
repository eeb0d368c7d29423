// FindCoordinator (key 10), v0..6. This single node coordinates every group
// (key type 0) and, so that transactional clients get an answer, every
// transactional id (key type 1); transactions themselves are another
// module's work. Other key types (2 = share groups, v6) are INVALID_REQUEST.
// v4+ batches keys (coordinator_keys) and answers per key.
#include "broker/api/handler.h"
#include "broker/kafka_error.h"

namespace headrace::broker {
namespace {

using Req = protocol::FindCoordinatorRequest;
using Resp = protocol::FindCoordinatorResponse;

constexpr int8_t kKeyTypeGroup = 0;
constexpr int8_t kKeyTypeTransaction = 1;

KafkaError ErrorFor(const BrokerContext& ctx, int8_t key_type) {
  if (key_type != kKeyTypeGroup && key_type != kKeyTypeTransaction)
    return KafkaError::kInvalidRequest;
  if (ctx.groups == nullptr) return KafkaError::kCoordinatorNotAvailable;
  return KafkaError::kNone;
}

void HandleFindCoordinator(BrokerContext& ctx, Req& req, Request request) {
  Resp resp;
  auto fill = [&](KafkaError e, int32_t& node, std::string& host, int32_t& port,
                  int16_t& code, std::optional<std::string>& message) {
    if (e == KafkaError::kNone) {
      node = ctx.group_coordinator_id();
      if (!ctx.FindEndpoint(node, &host, &port)) e = KafkaError::kCoordinatorNotAvailable;
    }
    code = Code(e);
    if (e == KafkaError::kNone) {
      message = std::nullopt;
    } else {
      node = -1;
      port = -1;
      message = KafkaErrorName(e);
    }
  };
  KafkaError e = ErrorFor(ctx, req.key_type);
  if (request.version() >= 4) {
    for (const std::string& key : req.coordinator_keys) {
      Resp::Coordinator c;
      c.key = key;
      fill(e, c.node_id, c.host, c.port, c.error_code, c.error_message);
      resp.coordinators.push_back(std::move(c));
    }
  } else {
    fill(e, resp.node_id, resp.host, resp.port, resp.error_code, resp.error_message);
  }
  request.Reply(resp);
}

}  // namespace

extern const ApiHandler kFindCoordinatorHandler =
    MakeHandler<protocol::FindCoordinatorRequest, HandleFindCoordinator>(0, 6);

}  // namespace headrace::broker
