#include "broker/security/sasl/jwt.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "broker/security/sasl/base64.h"

namespace headrace::broker::sasl {

using nlohmann::json;

struct JwtValidator::Key {
  std::string kid;
  std::string alg;  // "RS256" or "ES256"
  EVP_PKEY* pkey = nullptr;
  ~Key() { EVP_PKEY_free(pkey); }
};

namespace {

Status Bad(const std::string& why) { return Status::InvalidArgument(why); }

struct ParamBld {
  OSSL_PARAM_BLD* b = OSSL_PARAM_BLD_new();
  ~ParamBld() { OSSL_PARAM_BLD_free(b); }
};

EVP_PKEY* FromData(const char* type, OSSL_PARAM* params) {
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr);
  EVP_PKEY* pkey = nullptr;
  if (ctx == nullptr || EVP_PKEY_fromdata_init(ctx) <= 0 ||
      EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) <= 0)
    pkey = nullptr;
  EVP_PKEY_CTX_free(ctx);
  return pkey;
}

EVP_PKEY* RsaKey(const std::string& n, const std::string& e) {
  BIGNUM* bn_n = BN_bin2bn(reinterpret_cast<const unsigned char*>(n.data()), n.size(), nullptr);
  BIGNUM* bn_e = BN_bin2bn(reinterpret_cast<const unsigned char*>(e.data()), e.size(), nullptr);
  ParamBld bld;
  EVP_PKEY* pkey = nullptr;
  if (bn_n && bn_e && OSSL_PARAM_BLD_push_BN(bld.b, OSSL_PKEY_PARAM_RSA_N, bn_n) &&
      OSSL_PARAM_BLD_push_BN(bld.b, OSSL_PKEY_PARAM_RSA_E, bn_e)) {
    OSSL_PARAM* params = OSSL_PARAM_BLD_to_param(bld.b);
    if (params) pkey = FromData("RSA", params);
    OSSL_PARAM_free(params);
  }
  BN_free(bn_n);
  BN_free(bn_e);
  return pkey;
}

EVP_PKEY* P256Key(const std::string& x, const std::string& y) {
  if (x.size() != 32 || y.size() != 32) return nullptr;
  std::string point = "\x04" + x + y;
  ParamBld bld;
  EVP_PKEY* pkey = nullptr;
  if (OSSL_PARAM_BLD_push_utf8_string(bld.b, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) &&
      OSSL_PARAM_BLD_push_octet_string(bld.b, OSSL_PKEY_PARAM_PUB_KEY, point.data(),
                                       point.size())) {
    OSSL_PARAM* params = OSSL_PARAM_BLD_to_param(bld.b);
    if (params) pkey = FromData("EC", params);
    OSSL_PARAM_free(params);
  }
  return pkey;
}

// Member `name` of `j` when it is a string, else `fallback` (never throws,
// unlike json::value on a member of another type).
std::string StrMember(const json& j, const char* name, const char* fallback = "") {
  auto it = j.find(name);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string(fallback);
}

std::optional<std::string> B64Member(const json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end() || !it->is_string()) return std::nullopt;
  return Base64UrlDecode(it->get<std::string>());
}

// JWS ES256 signatures are r || s (32 bytes each); OpenSSL verifies DER.
std::optional<std::string> EcdsaRawToDer(const std::string& raw) {
  if (raw.size() != 64) return std::nullopt;
  ECDSA_SIG* sig = ECDSA_SIG_new();
  BIGNUM* r = BN_bin2bn(reinterpret_cast<const unsigned char*>(raw.data()), 32, nullptr);
  BIGNUM* s = BN_bin2bn(reinterpret_cast<const unsigned char*>(raw.data()) + 32, 32, nullptr);
  std::optional<std::string> out;
  if (sig && r && s && ECDSA_SIG_set0(sig, r, s) == 1) {
    r = s = nullptr;  // owned by sig
    unsigned char* der = nullptr;
    int len = i2d_ECDSA_SIG(sig, &der);
    if (len > 0) out = std::string(reinterpret_cast<char*>(der), len);
    OPENSSL_free(der);
  }
  BN_free(r);
  BN_free(s);
  ECDSA_SIG_free(sig);
  return out;
}

bool Verify(EVP_PKEY* pkey, std::string_view data, const std::string& sig) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  bool ok = ctx != nullptr &&
            EVP_DigestVerifyInit(ctx, nullptr, EVP_sha256(), nullptr, pkey) == 1 &&
            EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(sig.data()), sig.size(),
                             reinterpret_cast<const unsigned char*>(data.data()), data.size()) == 1;
  EVP_MD_CTX_free(ctx);
  return ok;
}

// A NumericDate claim in seconds (integer or fraction), or nullopt.
std::optional<double> NumericDate(const json& claims, const char* name) {
  auto it = claims.find(name);
  if (it == claims.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

}  // namespace

JwtValidator::JwtValidator(JwtSettings s) : settings_(std::move(s)) {}
JwtValidator::~JwtValidator() = default;

Result<std::shared_ptr<const JwtValidator>> JwtValidator::Create(JwtSettings settings) {
  std::shared_ptr<JwtValidator> v(new JwtValidator(std::move(settings)));
  if (v->settings_.jwks_json.empty()) return std::shared_ptr<const JwtValidator>(v);
  json set = json::parse(v->settings_.jwks_json, nullptr, /*allow_exceptions=*/false);
  auto keys = set.is_object() ? set.find("keys") : set.end();
  if (!set.is_object() || keys == set.end() || !keys->is_array())
    return Bad("JWKS: expected a JSON object with a \"keys\" array");
  for (const json& k : *keys) {
    if (!k.is_object()) continue;
    auto key = std::make_unique<Key>();
    key->kid = StrMember(k, "kid");
    const std::string kty = StrMember(k, "kty");
    const std::string use = StrMember(k, "use", "sig");
    if (use != "sig") continue;
    if (kty == "RSA") {
      auto n = B64Member(k, "n"), e = B64Member(k, "e");
      if (!n || !e) return Bad("JWKS: RSA key '" + key->kid + "' needs n and e");
      key->alg = "RS256";
      key->pkey = RsaKey(*n, *e);
    } else if (kty == "EC" && StrMember(k, "crv") == "P-256") {
      auto x = B64Member(k, "x"), y = B64Member(k, "y");
      if (!x || !y) return Bad("JWKS: EC key '" + key->kid + "' needs x and y");
      key->alg = "ES256";
      key->pkey = P256Key(*x, *y);
    } else {
      continue;  // other key types and curves are not used for RS256/ES256
    }
    if (key->pkey == nullptr) return Bad("JWKS: key '" + key->kid + "' is not a valid public key");
    v->keys_.push_back(std::move(key));
  }
  if (v->keys_.empty()) return Bad("JWKS: no RSA or EC P-256 signing key");
  return std::shared_ptr<const JwtValidator>(v);
}

Result<ValidatedJwt> JwtValidator::Validate(std::string_view token, int64_t now_ms) const {
  const size_t dot1 = token.find('.');
  const size_t dot2 = dot1 == token.npos ? token.npos : token.find('.', dot1 + 1);
  if (dot2 == token.npos || token.find('.', dot2 + 1) != token.npos)
    return Bad("malformed JWT: expected header.payload.signature");
  auto header_text = Base64UrlDecode(token.substr(0, dot1));
  auto payload_text = Base64UrlDecode(token.substr(dot1 + 1, dot2 - dot1 - 1));
  auto sig = Base64UrlDecode(token.substr(dot2 + 1));
  if (!header_text || !payload_text || !sig) return Bad("malformed JWT: bad base64url");
  json header = json::parse(*header_text, nullptr, false);
  json claims = json::parse(*payload_text, nullptr, false);
  if (!header.is_object() || !claims.is_object()) return Bad("malformed JWT: not JSON objects");
  const std::string alg = StrMember(header, "alg");
  if (keys_.empty()) {
    if (alg != "none" || !sig->empty())
      return Bad("unsecured OAUTHBEARER mode: only tokens with alg \"none\" are accepted");
  } else {
    if (alg != "RS256" && alg != "ES256") return Bad("JWT alg '" + alg + "' is not accepted");
    const std::string kid = StrMember(header, "kid");
    const Key* key = nullptr;
    for (const auto& k : keys_) {
      if (k->alg != alg) continue;
      if (!kid.empty() ? k->kid == kid : keys_.size() == 1) key = k.get();
    }
    if (key == nullptr) return Bad("no JWKS key for kid '" + kid + "' and alg " + alg);
    std::string sig_der = *sig;
    if (alg == "ES256") {
      auto der = EcdsaRawToDer(*sig);
      if (!der) return Bad("malformed ES256 signature");
      sig_der = *der;
    }
    if (!Verify(key->pkey, token.substr(0, dot2), sig_der)) return Bad("JWT signature is invalid");
  }
  const double now_s = now_ms / 1000.0;
  const double skew = static_cast<double>(settings_.clock_skew_seconds);
  std::optional<double> exp = NumericDate(claims, "exp");
  if (!exp) return Bad("JWT has no exp claim");
  if (*exp + skew <= now_s) return Bad("JWT expired");
  if (auto nbf = NumericDate(claims, "nbf"); nbf && *nbf - skew > now_s)
    return Bad("JWT not valid yet (nbf)");
  if (auto iat = NumericDate(claims, "iat"); iat && *iat - skew > now_s)
    return Bad("JWT issued in the future (iat)");
  if (!settings_.expected_issuer.empty() &&
      StrMember(claims, "iss") != settings_.expected_issuer)
    return Bad("JWT issuer is not the expected one");
  if (!settings_.expected_audience.empty()) {
    std::vector<std::string> aud;
    if (auto it = claims.find("aud"); it != claims.end()) {
      if (it->is_string()) aud.push_back(it->get<std::string>());
      if (it->is_array())
        for (const json& a : *it)
          if (a.is_string()) aud.push_back(a.get<std::string>());
    }
    bool match = false;
    for (const std::string& a : aud)
      for (const std::string& e : settings_.expected_audience) match |= a == e;
    if (!match) return Bad("JWT audience is not an expected one");
  }
  auto sub = claims.find(settings_.sub_claim_name);
  if (sub == claims.end() || !sub->is_string() || sub->get<std::string>().empty())
    return Bad("JWT has no '" + settings_.sub_claim_name + "' claim");
  const double exp_ms = std::min(*exp * 1000, 9.0e15);  // far beyond any session
  return ValidatedJwt{sub->get<std::string>(), static_cast<int64_t>(exp_ms)};
}

Result<std::string> ReadJwksUrl(const std::string& url) {
  if (url.rfind("file:", 0) != 0)
    return Bad("sasl.oauthbearer.jwks.endpoint.url: only file: URLs are supported, got '" + url +
               "'");
  std::string path = url.substr(5);
  if (path.rfind("//", 0) == 0) path = path.substr(2);  // file:///p -> /p
  std::ifstream in(path);
  if (!in) return Bad("sasl.oauthbearer.jwks.endpoint.url: cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace headrace::broker::sasl
