// SaslHandshake (key 17, v0-1): the client names its SASL mechanism; the
// broker answers with the listener's enabled mechanisms and starts an
// exchange in the Session (docs/security.md "SASL").
//  - not a SASL listener: ILLEGAL_SASL_STATE (as Kafka's KafkaApis).
//  - a mechanism the listener does not enable: UNSUPPORTED_SASL_MECHANISM,
//    then the connection closes.
//  - a handshake while an exchange is in progress: ILLEGAL_SASL_STATE, close.
//  - on an authenticated session it starts a re-authentication (KIP-368):
//    v1+ only and with the same mechanism; requests keep being served with
//    the old principal until the session expires.
//  - v0: the tokens that follow come raw, without SaslAuthenticate
//    (sasl_session.h HandleRawSaslToken).
#include "broker/api/sasl_session.h"
#include "broker/security/sasl/sasl_server.h"

namespace headrace::broker {
namespace {

void HandleSaslHandshake(BrokerContext& ctx, protocol::SaslHandshakeRequest& msg, Request req) {
  protocol::SaslHandshakeResponse resp;
  net::Session* s = req.mutable_session();
  const sasl::ListenerSasl* l =
      ctx.sasl != nullptr && s != nullptr && IsSaslProtocol(s->protocol)
          ? ctx.sasl->ForListener(s->listener_name)
          : nullptr;
  if (l == nullptr) {
    resp.error_code = Code(KafkaError::kIllegalSaslState);
    req.Reply(resp);
    return;
  }
  resp.mechanisms = l->mechanisms;
  if (s->sasl_exchange) {
    resp.error_code = Code(KafkaError::kIllegalSaslState);
    req.ReplyThenClose(resp, "SaslHandshake during a SASL exchange");
    return;
  }
  if (s->authenticated && (req.version() < 1 || msg.mechanism != s->sasl_mechanism)) {
    resp.error_code = Code(req.version() < 1 ? KafkaError::kIllegalSaslState
                                             : KafkaError::kUnsupportedSaslMechanism);
    req.ReplyThenClose(resp, "re-authentication must use SaslHandshake v1+ and the mechanism " +
                                 s->sasl_mechanism);
    return;
  }
  std::shared_ptr<sasl::MechanismExchange> ex = ctx.sasl->Start(s->listener_name, msg.mechanism);
  if (ex == nullptr) {
    resp.error_code = Code(KafkaError::kUnsupportedSaslMechanism);
    req.ReplyThenClose(resp, "unsupported SASL mechanism " + msg.mechanism);
    return;
  }
  s->sasl_exchange = std::move(ex);
  s->sasl_handshake_version = req.version();
  req.Reply(resp);
}

}  // namespace

extern const ApiHandler kSaslHandshakeHandler =
    MakeHandler<protocol::SaslHandshakeRequest, HandleSaslHandshake>(0, 1);

}  // namespace headrace::broker
