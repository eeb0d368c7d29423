// SCRAM-SHA-256 / SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka uses them:
// the credential the broker stores (salt, StoredKey, ServerKey,
// iterations — never the password), its text form (Kafka's ZooKeeper
// /config/users/<user> value "salt=<b64>,stored_key=<b64>,server_key=<b64>,
// iterations=<n>"), the server side of one exchange, and the client side
// (a broker authenticating to another: inter-broker SASL).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "headrace/status.h"

namespace headrace::broker::sasl {

// Kafka's ScramMechanism ids (DescribeUserScramCredentials /
// AlterUserScramCredentials).
enum class ScramMechanism : int8_t { kUnknown = 0, kSha256 = 1, kSha512 = 2 };

// "SCRAM-SHA-256" / "SCRAM-SHA-512".
const char* ScramMechanismName(ScramMechanism m);
// kUnknown for anything else.
ScramMechanism ScramMechanismFromName(std::string_view name);
ScramMechanism ScramMechanismFromId(int8_t id);

// Kafka's bounds on iterations (ScramMechanism.minIterations / the 16384
// cap AlterUserScramCredentials enforces).
inline constexpr int32_t kScramMinIterations = 4096;
inline constexpr int32_t kScramMaxIterations = 16384;

struct ScramCredential {
  std::string salt;        // raw bytes
  std::string stored_key;  // H(HMAC(SaltedPassword, "Client Key"))
  std::string server_key;  // HMAC(SaltedPassword, "Server Key")
  int32_t iterations = 0;

  bool operator==(const ScramCredential&) const = default;
};

// The credential of a salted password (what AlterUserScramCredentials
// carries: SaltedPassword = Hi(password, salt, iterations)).
ScramCredential CredentialFromSaltedPassword(ScramMechanism m, std::string_view salted_password,
                                             std::string_view salt, int32_t iterations);
// Hi(password, salt, i) = PBKDF2-HMAC-<hash>.
std::string SaltPassword(ScramMechanism m, std::string_view password, std::string_view salt,
                         int32_t iterations);

// Kafka's text form, and back (Corruption on anything else).
std::string FormatScramCredential(const ScramCredential& c);
Result<ScramCredential> ParseScramCredential(std::string_view text);

// The server side of one SCRAM exchange: client-first -> server-first,
// client-final -> server-final. Not thread-safe (one connection's).
class ScramServer {
 public:
  // Looks a user's credential up (nullopt: no such user for this mechanism).
  using Lookup = std::function<std::optional<ScramCredential>(const std::string& user)>;

  // `server_nonce`: empty = random (tests pass RFC 7677's).
  ScramServer(ScramMechanism m, Lookup lookup, std::string server_nonce = "");

  // One step. On success `*response` is the server's message; after the
  // client-final message done() is true and user() names who it is.
  // Errors: InvalidArgument with the message the client is told.
  Status Step(std::string_view client_message, std::string* response);
  bool done() const { return state_ == State::kDone; }
  const std::string& user() const { return user_; }

 private:
  enum class State { kClientFirst, kClientFinal, kDone, kFailed };
  Status ClientFirst(std::string_view msg, std::string* response);
  Status ClientFinal(std::string_view msg, std::string* response);

  const ScramMechanism mech_;
  Lookup lookup_;
  std::string server_nonce_;
  State state_ = State::kClientFirst;
  std::string user_;
  std::string gs2_header_;
  std::string client_first_bare_;
  std::string server_first_;
  std::string nonce_;  // client nonce + server nonce
  ScramCredential cred_;
};

// The client side of one SCRAM exchange (no channel binding, no authzid,
// as Kafka's client): client-first, then client-final for the server-first
// message, then the server-final message is verified. Not thread-safe.
class ScramClient {
 public:
  // `client_nonce`: empty = random (tests pass RFC 7677's).
  ScramClient(ScramMechanism m, std::string user, std::string password,
              std::string client_nonce = "");

  // "n,,n=<user>,r=<nonce>".
  std::string ClientFirst();
  // The client-final message for `server_first`. InvalidArgument when it
  // is malformed, does not extend our nonce, or asks for fewer than
  // kScramMinIterations iterations (as Kafka's client refuses).
  Result<std::string> ClientFinal(std::string_view server_first);
  // Checks the server's signature ("v=..."); InvalidArgument for an
  // error ("e=...") or a wrong signature (the server does not know the
  // password: not the broker we meant to reach).
  Status VerifyServerFinal(std::string_view server_final);

 private:
  const ScramMechanism mech_;
  const std::string user_;
  const std::string password_;
  std::string nonce_;
  std::string client_first_bare_;
  std::string auth_message_;
  std::string salted_password_;
};

}  // namespace headrace::broker::sasl
