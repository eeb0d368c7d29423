// SASL on a connection (docs/security.md "SASL"): the gate the dispatcher
// applies before routing a request, and the step that feeds one client
// token to the session's exchange (SaslAuthenticate and raw v0 tokens).
//
// Gate, on a SASL_PLAINTEXT / SASL_SSL listener:
//  - until the session is authenticated only ApiVersions, SaslHandshake and
//    SaslAuthenticate are served; anything else (or a request larger than
//    sasl.server.max.receive.size) closes the connection, as Kafka;
//  - once the session expired (KIP-368: connections.max.reauth.ms or the
//    token's exp), any request but SaslHandshake / SaslAuthenticate closes
//    the connection, as Kafka's "expired channel" rule.
// Threading: everything here runs on the connection's I/O thread, which
// alone writes the Session (net/session.h).
#pragma once

#include <chrono>
#include <span>
#include <string>
#include <string_view>

#include "broker/api/handler.h"
#include "broker/base/kafka_error.h"
#include "net/request_handler.h"

namespace headrace::broker {

inline bool IsSaslProtocol(net::SecurityProtocol p) {
  return p == net::SecurityProtocol::kSaslPlaintext || p == net::SecurityProtocol::kSaslSsl;
}

// "" = serve; otherwise why the connection is closed.
std::string SaslGate(const BrokerContext& ctx, const net::Session& s, int16_t api_key,
                     size_t frame_bytes, std::chrono::steady_clock::time_point now);

struct SaslStep {
  KafkaError error = KafkaError::kNone;  // kNone: go on (or done)
  std::string message;                   // the error's text for the client
  std::string response;                  // the server's token
  int64_t session_lifetime_ms = 0;       // once authenticated (KIP-368)
};

// Feeds `token` to `s.sasl_exchange`. On completion marks the session
// authenticated with the principal and expiry (a re-authentication must
// keep the principal); on failure clears the exchange.
// REQUIRES: on the connection's I/O thread; s.sasl_exchange not null.
SaslStep StepSaslExchange(const BrokerContext& ctx, net::Session& s, std::string_view token);

// After a v0 SaslHandshake the client sends raw size-prefixed tokens
// without request headers (KIP-152's predecessor framing). When `conn`'s
// session expects one, handles `frame` as that token (answering with the
// raw server token, or closing on failure as Kafka does) and returns true.
bool HandleRawSaslToken(const BrokerContext& ctx, const net::ConnectionInfo& conn,
                        std::span<uint8_t> frame, net::Responder& respond);

}  // namespace headrace::broker
