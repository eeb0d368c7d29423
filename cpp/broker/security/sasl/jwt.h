// JWT validation for OAUTHBEARER, as Kafka's OAuthBearerValidatorCallbackHandler
// does it: a compact JWS signed RS256 or ES256 with a key of a JWKS (read
// once from the file of `sasl.oauthbearer.jwks.endpoint.url`, a file: URL),
// the key picked by the header's "kid" (or the only key when the token or
// the set names none); then the claims: "exp" required, "nbf" and "iat"
// honoured, both with `sasl.oauthbearer.clock.skew.seconds`; "iss" equal to
// `sasl.oauthbearer.expected.issuer` and "aud" naming one of
// `sasl.oauthbearer.expected.audience` when those are set; the principal is
// the claim `sasl.oauthbearer.sub.claim.name` (default "sub").
//
// Without a JWKS (the unsecured mode, Kafka's default validator
// OAuthBearerUnsecuredValidatorCallbackHandler) only tokens with
// {"alg":"none"} and an empty signature are accepted; the claim checks
// are the same. For development only: anyone can mint such a token.
//
// Threading: immutable after Create; Validate is thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "headrace/status.h"

namespace headrace::broker::sasl {

struct JwtSettings {
  std::string jwks_json;  // the key set; empty = unsecured tokens only
  std::string expected_issuer;                 // "" = not checked
  std::vector<std::string> expected_audience;  // empty = not checked
  int64_t clock_skew_seconds = 30;
  std::string sub_claim_name = "sub";
};

struct ValidatedJwt {
  std::string principal;       // the sub claim
  int64_t expires_at_ms = 0;   // exp, in ms since the epoch
};

class JwtValidator {
 public:
  // InvalidArgument when the key set cannot be used (bad JSON, no usable
  // RSA/EC P-256 key).
  static Result<std::shared_ptr<const JwtValidator>> Create(JwtSettings settings);
  ~JwtValidator();

  // `now_ms`: the wall clock in ms since the epoch. Errors: InvalidArgument
  // with the reason (what the client is told).
  Result<ValidatedJwt> Validate(std::string_view token, int64_t now_ms) const;

  bool secured() const { return !keys_.empty(); }

  struct Key;  // jwt.cc: kid, kty, the public key

 private:
  explicit JwtValidator(JwtSettings s);
  JwtSettings settings_;
  std::vector<std::unique_ptr<Key>> keys_;
};

// Reads the JWKS named by a `file:` URL (file:/path or file:///path).
// InvalidArgument for another scheme or an unreadable file.
Result<std::string> ReadJwksUrl(const std::string& url);

}  // namespace headrace::broker::sasl
