#include "broker/api/sasl_session.h"

#include <algorithm>

#include "broker/security/sasl/sasl_server.h"
#include "common/logging.h"

namespace headrace::broker {
namespace {

bool IsAuthApi(int16_t api_key) {
  return api_key == protocol::SaslHandshakeRequest::kApiKey ||
         api_key == protocol::SaslAuthenticateRequest::kApiKey;
}

int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Kafka's session lifetime: the smaller of connections.max.reauth.ms (when
// > 0) and the credential's remaining life (when it has one); 0 = none.
int64_t SessionLifetimeMs(int64_t max_reauth_ms, int64_t credential_expiry_ms, int64_t now_ms) {
  const bool has_max = max_reauth_ms > 0;
  const bool has_cred = credential_expiry_ms >= 0;
  if (!has_max && !has_cred) return 0;
  int64_t cred_left = has_cred ? std::max<int64_t>(0, credential_expiry_ms - now_ms) : 0;
  if (!has_cred) return max_reauth_ms;
  if (!has_max) return cred_left;
  return std::min(cred_left, max_reauth_ms);
}

}  // namespace

std::string SaslGate(const BrokerContext& ctx, const net::Session& s, int16_t api_key,
                     size_t frame_bytes, std::chrono::steady_clock::time_point now) {
  if (!IsSaslProtocol(s.protocol)) return "";
  if (!s.authenticated) {
    if (api_key != protocol::ApiVersionsRequest::kApiKey && !IsAuthApi(api_key))
      return "request (api key " + std::to_string(api_key) + ") before SASL authentication";
    const sasl::ListenerSasl* l = ctx.sasl ? ctx.sasl->ForListener(s.listener_name) : nullptr;
    if (l != nullptr && static_cast<int64_t>(frame_bytes) > l->max_receive_size)
      return "request of " + std::to_string(frame_bytes) +
             " bytes before SASL authentication exceeds sasl.server.max.receive.size";
    return "";
  }
  if (now >= s.session_expiry && !IsAuthApi(api_key))
    return "SASL session expired (connections.max.reauth.ms / token lifetime) without "
           "re-authentication";
  return "";
}

SaslStep StepSaslExchange(const BrokerContext& ctx, net::Session& s, std::string_view token) {
  // Only broker/security/sasl exchanges are ever stored in a Session (sasl_handshake.cc).
  auto* ex = static_cast<sasl::MechanismExchange*>(s.sasl_exchange.get());
  SaslStep step;
  sasl::MechanismExchange::Outcome o = ex->Evaluate(token);
  if (!o.status.ok()) {
    s.sasl_exchange.reset();
    step.error = KafkaError::kSaslAuthenticationFailed;
    step.message = o.status.message();
    return step;
  }
  step.response = std::move(o.response);
  if (!o.complete) return step;
  const std::string mechanism = ex->mechanism();
  s.sasl_exchange.reset();
  if (s.authenticated && o.principal != s.principal) {
    step.error = KafkaError::kSaslAuthenticationFailed;
    step.message = "Cannot change principals during re-authentication from " + s.principal +
                   " to " + o.principal;
    return step;
  }
  int64_t max_reauth = 0;
  if (const sasl::ListenerSasl* l = ctx.sasl ? ctx.sasl->ForListener(s.listener_name) : nullptr) {
    auto it = l->max_reauth_ms.find(mechanism);
    if (it != l->max_reauth_ms.end()) max_reauth = it->second;
  }
  step.session_lifetime_ms = SessionLifetimeMs(max_reauth, o.credential_expiry_ms, WallMs());
  s.principal = o.principal;
  s.sasl_mechanism = mechanism;
  s.authenticated = true;
  s.session_expiry = step.session_lifetime_ms > 0
                         ? std::chrono::steady_clock::now() +
                               std::chrono::milliseconds(step.session_lifetime_ms)
                         : std::chrono::steady_clock::time_point::max();
  return step;
}

bool HandleRawSaslToken(const BrokerContext& ctx, const net::ConnectionInfo& conn,
                        std::span<uint8_t> frame, net::Responder& respond) {
  net::Session* s = conn.session.get();
  if (s == nullptr || s->sasl_handshake_version != 0 || !s->sasl_exchange) return false;
  const sasl::ListenerSasl* l = ctx.sasl ? ctx.sasl->ForListener(s->listener_name) : nullptr;
  if (l != nullptr && static_cast<int64_t>(frame.size()) > l->max_receive_size) {
    respond(net::Reply::Close("SASL token of " + std::to_string(frame.size()) +
                              " bytes exceeds sasl.server.max.receive.size"));
    return true;
  }
  SaslStep step = StepSaslExchange(
      ctx, *s, std::string_view(reinterpret_cast<const char*>(frame.data()), frame.size()));
  if (step.error != KafkaError::kNone) {
    // v0 framing has no place for an error: Kafka closes the connection.
    respond(net::Reply::Close("SASL authentication failed: " + step.message));
    return true;
  }
  if (s->authenticated) s->sasl_handshake_version = -1;  // Kafka requests again from here
  OutputBuffer out;
  out.Append(step.response.data(), step.response.size());
  respond(net::Reply::Respond(std::move(out)));
  return true;
}

}  // namespace headrace::broker
