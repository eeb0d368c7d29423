// The broker's SASL settings (docs/security.md "SASL"), Kafka's names:
// sasl.enabled.mechanisms, connections.max.reauth.ms, sasl.jaas.config,
// sasl.server.max.receive.size and the sasl.oauthbearer.* validation keys.
// Each may also be given for one listener and one mechanism as Kafka
// prefixes them, the most specific winning:
//   listener.name.<listener>.<mechanism>.<key>   (e.g. ...sasl_plaintext.plain.sasl.jaas.config)
//   listener.name.<listener>.<key>
//   <key>
// with <listener> and <mechanism> in lower case.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "broker/config/config_table.h"

namespace headrace::broker::sasl {

// The mechanisms this broker implements.
inline const std::vector<std::string>& SupportedMechanisms() {
  static const std::vector<std::string> m = {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512",
                                             "OAUTHBEARER"};
  return m;
}

struct SaslConfig {
  std::string enabled_mechanisms = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512";
  int64_t connections_max_reauth_ms = 0;
  std::string jaas_config;
  int64_t server_max_receive_size = 524288;
  std::string callback_handler_class;
  std::string jwks_endpoint_url;
  std::string expected_issuer;
  std::string expected_audience;
  int64_t clock_skew_seconds = 30;
  std::string sub_claim_name = "sub";
  // sasl.mechanism.inter.broker.protocol: Kafka's default GSSAPI has no
  // implementation here, so a SASL inter-broker listener must set it
  // (replication/inter_broker_security.h checks at start).
  std::string inter_broker_mechanism = "GSSAPI";

  // Every key as given: the unprefixed ones and the listener-prefixed ones.
  std::map<std::string, std::string> given;

  // Moves every SASL key (prefixed or not) out of `props`, validating each
  // value. Errors: InvalidArgument naming the key.
  Status Extract(std::map<std::string, std::string>& props);

  // The value of table key `key` for `listener` and `mechanism` (either may
  // be ""), by the precedence above; the default when none is set.
  std::string Lookup(const std::string& listener, const std::string& mechanism,
                     const std::string& key) const;
};

// True for keys Extract takes: table keys and their listener.name.* forms.
bool IsSaslConfigKey(const std::string& key);

// "a, b" -> {"a", "b"} (empty items dropped).
std::vector<std::string> SplitList(const std::string& text);

}  // namespace headrace::broker::sasl
