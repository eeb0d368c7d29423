// Session: what the broker knows about the client on one connection — the
// listener it came in on, that listener's security protocol, and who it is
// (the principal). Every handler can read it (Request::session()); the
// authorizer, quotas and SASL are its users (docs/security.md).
//
// Threading contract: the server creates it when it accepts the socket and
// it lives as long as any request of the connection. `listener_name` and
// `protocol` never change. The mutable fields are written only on the
// connection's own I/O thread (TLS handshake, SASL exchange), before any
// request that reads them is dispatched, so handlers read them without a
// lock; a handler that hands work to another thread copies what it needs.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace headrace::net {

// Kafka's security protocols (SecurityProtocol.java ids).
enum class SecurityProtocol : int16_t {
  kPlaintext = 0,
  kSsl = 1,
  kSaslPlaintext = 2,
  kSaslSsl = 3,
};

// The server side of one SASL exchange in progress (broker/security/sasl owns the
// concrete mechanisms); the Session only keeps it between the client's
// tokens.
class SaslExchange {
 public:
  virtual ~SaslExchange() = default;
};

struct Session {
  // Fixed at accept.
  std::string listener_name = "PLAINTEXT";  // e.g. "PLAINTEXT", "INTERNAL"
  SecurityProtocol protocol = SecurityProtocol::kPlaintext;

  // "User:ANONYMOUS" until TLS client auth or SASL names someone else
  // (Kafka's KafkaPrincipal "type:name" form).
  std::string principal = "User:ANONYMOUS";
  // SASL: the mechanism chosen by SaslHandshake ("" = none yet) and whether
  // authentication completed; a SASL listener answers nothing but
  // ApiVersions / SaslHandshake / SaslAuthenticate until it has.
  std::string sasl_mechanism;
  bool authenticated = false;
  // The exchange started by the last SaslHandshake and not finished yet
  // (null: none), and that handshake's version: after a v0 handshake the
  // client sends raw size-prefixed tokens without request headers (KIP-152).
  std::shared_ptr<SaslExchange> sasl_exchange;
  int16_t sasl_handshake_version = -1;
  // KIP-368: when the credential expires (connections.max.reauth.ms or the
  // token's lifetime); time_point::max() = never.
  std::chrono::steady_clock::time_point session_expiry =
      std::chrono::steady_clock::time_point::max();
};

}  // namespace headrace::net
