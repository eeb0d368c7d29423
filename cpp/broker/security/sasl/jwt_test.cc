#include "broker/security/sasl/jwt.h"

#include <gtest/gtest.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>

#include "broker/security/sasl/base64.h"

namespace headrace::broker::sasl {
namespace {

std::string B64Url(std::string_view bytes) {
  std::string s = Base64Encode(bytes);
  for (char& c : s) c = c == '+' ? '-' : c == '/' ? '_' : c;
  while (!s.empty() && s.back() == '=') s.pop_back();
  return s;
}

std::string Bn(EVP_PKEY* k, const char* name) {
  BIGNUM* bn = nullptr;
  EVP_PKEY_get_bn_param(k, name, &bn);
  std::string out(BN_num_bytes(bn), '\0');
  BN_bn2bin(bn, reinterpret_cast<unsigned char*>(out.data()));
  BN_free(bn);
  return out;
}

std::string Sign(EVP_PKEY* k, std::string_view data) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  size_t len = 0;
  EVP_DigestSignInit(ctx, nullptr, EVP_sha256(), nullptr, k);
  EVP_DigestSign(ctx, nullptr, &len, reinterpret_cast<const unsigned char*>(data.data()), data.size());
  std::string sig(len, '\0');
  EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(sig.data()), &len,
                 reinterpret_cast<const unsigned char*>(data.data()), data.size());
  sig.resize(len);
  EVP_MD_CTX_free(ctx);
  return sig;
}

// DER ECDSA signature -> JWS r || s.
std::string RawEcdsa(const std::string& der) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(der.data());
  ECDSA_SIG* sig = d2i_ECDSA_SIG(nullptr, &p, der.size());
  std::string out(64, '\0');
  BN_bn2binpad(ECDSA_SIG_get0_r(sig), reinterpret_cast<unsigned char*>(out.data()), 32);
  BN_bn2binpad(ECDSA_SIG_get0_s(sig), reinterpret_cast<unsigned char*>(out.data()) + 32, 32);
  ECDSA_SIG_free(sig);
  return out;
}

class JwtTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rsa_ = EVP_RSA_gen(2048);
    ec_ = EVP_EC_gen("P-256");
    unsigned char pub[65];
    size_t len = 0;
    EVP_PKEY_get_octet_string_param(ec_, OSSL_PKEY_PARAM_PUB_KEY, pub, sizeof pub, &len);
    ASSERT_EQ(len, 65u);
    std::string point(reinterpret_cast<char*>(pub), len);
    jwks_ = std::string("{\"keys\":[") +
            "{\"kty\":\"RSA\",\"kid\":\"r1\",\"use\":\"sig\",\"n\":\"" + B64Url(Bn(rsa_, "n")) +
            "\",\"e\":\"" + B64Url(Bn(rsa_, "e")) + "\"}," +
            "{\"kty\":\"EC\",\"kid\":\"e1\",\"crv\":\"P-256\",\"x\":\"" + B64Url(point.substr(1, 32)) +
            "\",\"y\":\"" + B64Url(point.substr(33, 32)) + "\"}]}";
  }
  void TearDown() override {
    EVP_PKEY_free(rsa_);
    EVP_PKEY_free(ec_);
  }

  std::string Token(const std::string& alg, const std::string& kid, const std::string& claims) {
    std::string input = B64Url("{\"alg\":\"" + alg + "\",\"kid\":\"" + kid + "\"}") + "." +
                        B64Url(claims);
    std::string sig = alg == "RS256" ? Sign(rsa_, input) : RawEcdsa(Sign(ec_, input));
    return input + "." + B64Url(sig);
  }

  std::shared_ptr<const JwtValidator> Validator() {
    JwtSettings s;
    s.jwks_json = jwks_;
    s.expected_issuer = "https://issuer";
    s.expected_audience = {"headrace", "other"};
    auto v = JwtValidator::Create(s);
    EXPECT_TRUE(v.ok()) << v.status().message();
    return *v;
  }

  static constexpr int64_t kNowMs = 1'700'000'000'000;
  EVP_PKEY* rsa_ = nullptr;
  EVP_PKEY* ec_ = nullptr;
  std::string jwks_;
};

TEST_F(JwtTest, AcceptsRs256AndEs256WithExpectedClaims) {
  auto v = Validator();
  const std::string claims =
      R"({"sub":"alice","iss":"https://issuer","aud":["x","headrace"],"exp":1700000600,"iat":1699999999.5})";
  for (const char* alg : {"RS256", "ES256"}) {
    auto r = v->Validate(Token(alg, alg[0] == 'R' ? "r1" : "e1", claims), kNowMs);
    ASSERT_TRUE(r.ok()) << alg << ": " << r.status().message();
    EXPECT_EQ(r->principal, "alice");
    EXPECT_EQ(r->expires_at_ms, 1700000600000);
  }
}

TEST_F(JwtTest, RejectsBadSignatureClaimsAndShapes) {
  auto v = Validator();
  const std::string good = R"({"sub":"alice","iss":"https://issuer","aud":"headrace","exp":1700000600})";
  std::string tampered = Token("RS256", "r1", good);
  tampered[tampered.size() / 2] = tampered[tampered.size() / 2] == 'A' ? 'B' : 'A';
  struct Case { std::string token; const char* why; };
  const Case cases[] = {
      {tampered, "signature"},
      {Token("RS256", "e1", good), "kid"},  // the EC key's id with RS256
      {Token("RS256", "r1", R"({"sub":"alice","iss":"https://issuer","aud":"headrace","exp":1699999000})"), "expired"},
      {Token("RS256", "r1", R"({"sub":"alice","iss":"https://evil","aud":"headrace","exp":1700000600})"), "issuer"},
      {Token("RS256", "r1", R"({"sub":"alice","iss":"https://issuer","aud":"nope","exp":1700000600})"), "audience"},
      {Token("RS256", "r1", R"({"sub":"alice","iss":"https://issuer","aud":"headrace"})"), "exp"},
      {Token("RS256", "r1", R"({"iss":"https://issuer","aud":"headrace","exp":1700000600})"), "sub"},
      {Token("RS256", "r1", R"({"sub":"a","iss":"https://issuer","aud":"headrace","exp":1700000600,"nbf":1700000100})"), "nbf"},
      {Token("RS256", "r1", R"({"sub":5,"iss":7,"aud":[1],"exp":"x"})"), "types"},
      {"a.b", "shape"}, {"a.b.c.d", "shape"}, {"!!.!!.!!", "base64"}, {"..", "empty"},
      {B64Url("{\"alg\":\"none\"}") + "." + B64Url(good) + ".", "alg none with a key set"},
  };
  for (const Case& c : cases) EXPECT_FALSE(v->Validate(c.token, kNowMs).ok()) << c.why;
  // Within the clock skew (30 s) an expired token still passes.
  EXPECT_TRUE(v->Validate(Token("ES256", "e1", R"({"sub":"a","iss":"https://issuer","aud":"headrace","exp":1699999980})"), kNowMs).ok());
}

TEST_F(JwtTest, UnsecuredModeTakesOnlyAlgNone) {
  auto v = JwtValidator::Create(JwtSettings{});
  ASSERT_TRUE(v.ok());
  const std::string claims = R"({"sub":"bob","exp":1700000600.123,"iat":1699999000.5})";
  auto r = (*v)->Validate(B64Url("{\"alg\":\"none\"}") + "." + B64Url(claims) + ".", kNowMs);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->principal, "bob");
  EXPECT_FALSE((*v)->Validate(Token("RS256", "r1", claims), kNowMs).ok());
}

TEST(JwksTest, RejectsUnusableKeySets) {
  for (const char* bad : {"not json", "{}", "{\"keys\":{}}", "{\"keys\":[]}",
                          "{\"keys\":[{\"kty\":\"RSA\",\"n\":\"AQAB\"}]}",
                          "{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"AA\",\"y\":\"AA\"}]}"}) {
    JwtSettings s;
    s.jwks_json = bad;
    EXPECT_FALSE(JwtValidator::Create(s).ok()) << bad;
  }
  EXPECT_FALSE(ReadJwksUrl("https://idp/jwks").ok());
  EXPECT_FALSE(ReadJwksUrl("file:/nonexistent/jwks.json").ok());
}

}  // namespace
}  // namespace headrace::broker::sasl
