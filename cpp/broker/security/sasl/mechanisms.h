// The server side of one SASL exchange per mechanism: PLAIN (RFC 4616),
// SCRAM-SHA-256/512 (RFC 5802/7677, scram.h) and OAUTHBEARER (RFC 7628,
// jwt.h). An exchange lives in the connection's net::Session between the
// client's tokens and is driven only on that connection's I/O thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "broker/security/sasl/jwt.h"
#include "broker/security/sasl/scram.h"
#include "net/session.h"

namespace headrace::broker::sasl {

class ScramCredentialStore;

class MechanismExchange : public net::SaslExchange {
 public:
  struct Outcome {
    Status status;          // not OK: authentication failed; message() goes to the client
    std::string response;   // the server's token
    bool complete = false;  // authenticated (status OK and no more tokens expected)
    std::string principal;  // "User:<name>" once complete
    int64_t credential_expiry_ms = -1;  // the credential's end (epoch ms); -1 = none
  };

  explicit MechanismExchange(std::string mechanism) : mechanism_(std::move(mechanism)) {}
  virtual Outcome Evaluate(std::string_view token) = 0;
  const std::string& mechanism() const { return mechanism_; }

 private:
  const std::string mechanism_;
};

// PLAIN: "[authzid] NUL authcid NUL passwd" against `users` (name ->
// password). An authzid other than the user's own name fails, as Kafka.
std::shared_ptr<MechanismExchange> NewPlainExchange(
    std::shared_ptr<const std::map<std::string, std::string>> users);

std::shared_ptr<MechanismExchange> NewScramExchange(ScramMechanism m,
                                                    const ScramCredentialStore* store);

// `validator` must not be null. `now_ms` reads the wall clock (tests fix it).
std::shared_ptr<MechanismExchange> NewOAuthBearerExchange(
    std::shared_ptr<const JwtValidator> validator, int64_t (*now_ms)() = nullptr);

// RFC 7628 client initial response: gs2 header, then \x01-separated
// key=value pairs with auth="Bearer <token>", ending in \x01\x01. The token,
// or InvalidArgument.
Result<std::string> ParseOAuthBearerClientFirst(std::string_view msg);

}  // namespace headrace::broker::sasl
