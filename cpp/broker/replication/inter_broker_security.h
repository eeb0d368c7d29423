// How this broker connects to the other brokers of its cluster (replica
// fetchers, the transaction marker sender): the security protocol of the
// inter-broker listener (inter.broker.listener.name /
// security.inter.broker.protocol) and what it needs as a client, as Kafka
// derives it from the same listener's settings (docs/security.md
// "Inter-broker security"):
//   SSL, SASL_SSL   a TLS client context trusting the listener's truststore
//                   (ssl.truststore.*, listener.name.<l>.ssl.*), presenting
//                   the broker's keystore as client certificate, checking
//                   host names when ssl.endpoint.identification.algorithm
//                   is https (Kafka's default);
//   SASL_*          sasl.mechanism.inter.broker.protocol (PLAIN,
//                   SCRAM-SHA-256, SCRAM-SHA-512) with the username and
//                   password of the listener's JAAS config
//                   (listener.name.<l>.<mechanism>.sasl.jaas.config, then
//                   the less specific forms as SaslConfig::Lookup).
// Built once at start; immutable and shared by every connection.
#pragma once

#include <memory>
#include <string>

#include "headrace/status.h"
#include "net/session.h"
#include "net/tls_context.h"

namespace headrace::broker {
struct BrokerConfig;
struct SslConfig;
namespace sasl {
struct SaslConfig;
}
}  // namespace headrace::broker

namespace headrace::broker::replication {

struct InterBrokerSecurity {
  std::string listener;  // upper case, e.g. "INTERNAL"
  net::SecurityProtocol protocol = net::SecurityProtocol::kPlaintext;
  std::shared_ptr<net::TlsContext> tls;  // SSL / SASL_SSL
  std::string sasl_mechanism;            // SASL_PLAINTEXT / SASL_SSL
  std::string sasl_username;
  std::string sasl_password;

  bool uses_tls() const { return tls != nullptr; }
  bool uses_sasl() const { return !sasl_mechanism.empty(); }
  // For the start-up line: "SASL_SSL (SCRAM-SHA-512 as broker; TLS, host
  // names verified)".
  std::string Describe() const;

  // The inter-broker client settings of a cluster broker. InvalidArgument,
  // one line naming the key, for: an unsupported mechanism (GSSAPI, Kafka's
  // default, and OAUTHBEARER have no client side here), a mechanism the
  // listener does not enable, a JAAS config without username/password, an
  // unusable truststore or keystore.
  static Result<std::shared_ptr<const InterBrokerSecurity>> Build(const BrokerConfig& config,
                                                                   const SslConfig& ssl,
                                                                   const sasl::SaslConfig& sasl);
};

}  // namespace headrace::broker::replication
