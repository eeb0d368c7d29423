#include "broker/security/sasl/mechanisms.h"

#include <openssl/crypto.h>

#include <chrono>

#include "broker/security/sasl/scram_store.h"

namespace headrace::broker::sasl {
namespace {

using Outcome = MechanismExchange::Outcome;

Outcome Fail(std::string why) {
  Outcome o;
  o.status = Status::InvalidArgument(std::move(why));
  return o;
}

Outcome Complete(const std::string& user, std::string response = "", int64_t expiry_ms = -1) {
  Outcome o;
  o.complete = true;
  o.principal = "User:" + user;
  o.response = std::move(response);
  o.credential_expiry_ms = expiry_ms;
  return o;
}

class PlainExchange final : public MechanismExchange {
 public:
  explicit PlainExchange(std::shared_ptr<const std::map<std::string, std::string>> users)
      : MechanismExchange("PLAIN"), users_(std::move(users)) {}

  Outcome Evaluate(std::string_view token) override {
    if (used_) return Fail("Authentication failed: unexpected PLAIN token");
    used_ = true;
    const size_t nul1 = token.find('\0');
    const size_t nul2 = nul1 == token.npos ? token.npos : token.find('\0', nul1 + 1);
    if (nul2 == token.npos || token.find('\0', nul2 + 1) != token.npos)
      return Fail("Authentication failed: Invalid SASL/PLAIN response: expected 3 tokens");
    std::string_view authzid = token.substr(0, nul1);
    std::string user(token.substr(nul1 + 1, nul2 - nul1 - 1));
    std::string_view password = token.substr(nul2 + 1);
    if (user.empty())
      return Fail("Authentication failed: username not specified");
    if (password.empty())
      return Fail("Authentication failed: password not specified");
    if (!authzid.empty() && authzid != user)
      return Fail("Authentication failed: Client requested an authorization id that is "
                  "different from username");
    auto it = users_->find(user);
    // Compare in constant time even for an unknown user, so timing does not
    // tell which users exist.
    const std::string& expected = it != users_->end() ? it->second : user;
    const bool same = expected.size() == password.size() &&
                      CRYPTO_memcmp(expected.data(), password.data(), password.size()) == 0;
    if (it == users_->end() || !same)
      return Fail("Authentication failed: Invalid username or password");
    return Complete(user);
  }

 private:
  std::shared_ptr<const std::map<std::string, std::string>> users_;
  bool used_ = false;
};

class ScramExchange final : public MechanismExchange {
 public:
  ScramExchange(ScramMechanism m, const ScramCredentialStore* store)
      : MechanismExchange(ScramMechanismName(m)),
        server_(m, [store, m](const std::string& user) { return store->Find(user, m); }) {}

  Outcome Evaluate(std::string_view token) override {
    Outcome o;
    o.status = server_.Step(token, &o.response);
    if (o.status.ok() && server_.done()) return Complete(server_.user(), std::move(o.response));
    return o;
  }

 private:
  ScramServer server_;
};

int64_t WallClockMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class OAuthBearerExchange final : public MechanismExchange {
 public:
  OAuthBearerExchange(std::shared_ptr<const JwtValidator> v, int64_t (*now_ms)())
      : MechanismExchange("OAUTHBEARER"), validator_(std::move(v)), now_ms_(now_ms) {}

  Outcome Evaluate(std::string_view msg) override {
    if (used_) return Fail("Authentication failed: unexpected OAUTHBEARER message");
    used_ = true;
    Result<std::string> token = ParseOAuthBearerClientFirst(msg);
    if (!token.ok()) return Fail("Authentication failed: " + token.status().message());
    Result<ValidatedJwt> jwt = validator_->Validate(*token, now_ms_ ? now_ms_() : WallClockMs());
    if (!jwt.ok()) return Fail("Authentication failed: " + jwt.status().message());
    return Complete(jwt->principal, "", jwt->expires_at_ms);
  }

 private:
  std::shared_ptr<const JwtValidator> validator_;
  int64_t (*now_ms_)();
  bool used_ = false;
};

}  // namespace

Result<std::string> ParseOAuthBearerClientFirst(std::string_view msg) {
  // gs2-header = "n," [ "a=" saslname ] ","  (no channel binding)
  if (msg.size() < 3 || msg.substr(0, 2) != "n,")
    return Status::InvalidArgument("invalid OAUTHBEARER client first message");
  size_t end = msg.find(',', 2);
  if (end == msg.npos) return Status::InvalidArgument("invalid OAUTHBEARER gs2 header");
  std::string_view rest = msg.substr(end + 1);
  if (rest.size() < 3 || rest.front() != '\x01' || rest.substr(rest.size() - 2) != "\x01\x01")
    return Status::InvalidArgument("invalid OAUTHBEARER client first message framing");
  rest = rest.substr(1, rest.size() - 3);  // the pairs, \x01-separated
  std::string token;
  size_t pos = 0;
  while (pos <= rest.size()) {
    size_t sep = rest.find('\x01', pos);
    std::string_view kv = rest.substr(pos, sep == rest.npos ? rest.npos : sep - pos);
    size_t eq = kv.find('=');
    if (eq == kv.npos || eq == 0) return Status::InvalidArgument("invalid OAUTHBEARER key/value");
    if (kv.substr(0, eq) == "auth") {
      std::string_view v = kv.substr(eq + 1);
      if (v.size() < 8 || (v.substr(0, 7) != "Bearer " && v.substr(0, 7) != "bearer "))
        return Status::InvalidArgument("OAUTHBEARER auth value is not 'Bearer <token>'");
      v.remove_prefix(7);
      while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
      token = std::string(v);
    }
    if (sep == rest.npos) break;
    pos = sep + 1;
  }
  if (token.empty()) return Status::InvalidArgument("OAUTHBEARER message has no auth token");
  return token;
}

std::shared_ptr<MechanismExchange> NewPlainExchange(
    std::shared_ptr<const std::map<std::string, std::string>> users) {
  return std::make_shared<PlainExchange>(std::move(users));
}

std::shared_ptr<MechanismExchange> NewScramExchange(ScramMechanism m,
                                                    const ScramCredentialStore* store) {
  return std::make_shared<ScramExchange>(m, store);
}

std::shared_ptr<MechanismExchange> NewOAuthBearerExchange(
    std::shared_ptr<const JwtValidator> validator, int64_t (*now_ms)()) {
  return std::make_shared<OAuthBearerExchange>(std::move(validator), now_ms);
}

}  // namespace headrace::broker::sasl
