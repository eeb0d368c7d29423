// SaslServer: the SASL settings of every SASL listener, resolved once at
// start from SaslConfig (sasl_config.h), and the factory of exchanges.
// Listeners: each SASL_PLAINTEXT / SASL_SSL listener gets its enabled
// mechanisms, PLAIN users (its plain.sasl.jaas.config), re-authentication
// period per mechanism and OAUTHBEARER validator.
//
// Threading: immutable once the broker serves; shared by every I/O thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "broker/security/sasl/jwt.h"
#include "broker/security/sasl/mechanisms.h"
#include "broker/security/sasl/sasl_config.h"
#include "broker/security/sasl/scram_store.h"

namespace headrace::broker::sasl {

struct ListenerSasl {
  std::vector<std::string> mechanisms;  // enabled, in the configured order
  std::shared_ptr<const std::map<std::string, std::string>> plain_users;
  std::map<std::string, int64_t> max_reauth_ms;  // by mechanism; 0 = none
  std::shared_ptr<const JwtValidator> oauth;     // null when OAUTHBEARER is off
  int64_t max_receive_size = 524288;
};

class SaslServer {
 public:
  // `sasl_listeners`: names of the SASL listeners. Errors: InvalidArgument
  // (bad JAAS text, unreadable JWKS).
  static Result<std::unique_ptr<SaslServer>> Create(const SaslConfig& config,
                                                    const std::vector<std::string>& sasl_listeners);
  // The SCRAM credential store (opened when the broker starts, before it
  // serves). `store` must outlive the server. REQUIRES: before any Start.
  void AttachCredentials(ScramCredentialStore* store) { store_ = store; }

  // null: not a SASL listener.
  const ListenerSasl* ForListener(const std::string& listener) const;
  // A new exchange of `mechanism` on `listener`; null when not enabled there.
  std::shared_ptr<MechanismExchange> Start(const std::string& listener,
                                           const std::string& mechanism) const;
  // REQUIRES: AttachCredentials was called.
  ScramCredentialStore& credentials() const { return *store_; }

 private:
  std::map<std::string, ListenerSasl> listeners_;
  ScramCredentialStore* store_ = nullptr;
};

}  // namespace headrace::broker::sasl
