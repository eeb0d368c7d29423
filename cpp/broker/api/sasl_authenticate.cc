// SaslAuthenticate (key 36, v0-2): one client token of the exchange the
// last SaslHandshake started; the answer carries the server's token, and
// once authenticated (v1+) the session's lifetime (KIP-368). A failure is
// SASL_AUTHENTICATION_FAILED with the reason, then the connection closes;
// SaslAuthenticate without an exchange is ILLEGAL_SASL_STATE, then close
// (docs/security.md "SASL").
#include "broker/api/sasl_session.h"

namespace headrace::broker {
namespace {

void HandleSaslAuthenticate(BrokerContext& ctx, protocol::SaslAuthenticateRequest& msg,
                            Request req) {
  protocol::SaslAuthenticateResponse resp;
  net::Session* s = req.mutable_session();
  if (s == nullptr || !IsSaslProtocol(s->protocol)) {  // Kafka answers, keeps the connection
    resp.error_code = Code(KafkaError::kIllegalSaslState);
    resp.error_message = "SaslAuthenticate request received after successful authentication";
    req.Reply(resp);
    return;
  }
  if (!s->sasl_exchange || s->sasl_handshake_version == 0) {
    resp.error_code = Code(KafkaError::kIllegalSaslState);
    resp.error_message = s->authenticated
                             ? "SaslAuthenticate request received after successful authentication"
                             : "Unexpected SaslAuthenticate request: no SaslHandshake before it";
    req.ReplyThenClose(resp, *resp.error_message);
    return;
  }
  SaslStep step = StepSaslExchange(ctx, *s, msg.auth_bytes);
  resp.error_code = Code(step.error);
  if (step.error != KafkaError::kNone) {
    resp.error_message = step.message;
    req.ReplyThenClose(resp, "SASL authentication failed: " + step.message);
    return;
  }
  resp.auth_bytes = std::move(step.response);
  resp.session_lifetime_ms = step.session_lifetime_ms;
  req.Reply(resp);
}

}  // namespace

extern const ApiHandler kSaslAuthenticateHandler =
    MakeHandler<protocol::SaslAuthenticateRequest, HandleSaslAuthenticate>(0, 2);

}  // namespace headrace::broker
