#include "broker/security/sasl/scram.h"

#include <gtest/gtest.h>

#include "broker/security/sasl/base64.h"
#include "broker/security/sasl/jaas.h"
#include "broker/security/sasl/mechanisms.h"
#include "broker/security/sasl/scram_store.h"

namespace headrace::broker::sasl {
namespace {

// RFC 7677 section 3: user "user", password "pencil".
constexpr char kSalt[] = "W22ZaJ0SNY7soEsUEjb6gQ==";
constexpr char kClientFirst[] = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO";
constexpr char kServerNonce[] = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
constexpr char kServerFirst[] =
    "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
constexpr char kClientFinal[] =
    "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
constexpr char kServerFinal[] = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";

ScramCredential PencilCredential() {
  std::string salt = *Base64Decode(kSalt);
  std::string salted = SaltPassword(ScramMechanism::kSha256, "pencil", salt, 4096);
  return CredentialFromSaltedPassword(ScramMechanism::kSha256, salted, salt, 4096);
}

ScramServer::Lookup Only(const std::string& name, ScramCredential c) {
  return [name, c](const std::string& user) -> std::optional<ScramCredential> {
    if (user == name) return c;
    return std::nullopt;
  };
}

TEST(ScramTest, Rfc7677TestVectorAuthenticates) {
  ScramServer server(ScramMechanism::kSha256, Only("user", PencilCredential()), kServerNonce);
  std::string out;
  ASSERT_TRUE(server.Step(kClientFirst, &out).ok());
  EXPECT_EQ(out, kServerFirst);
  ASSERT_TRUE(server.Step(kClientFinal, &out).ok());
  EXPECT_EQ(out, kServerFinal);
  EXPECT_TRUE(server.done());
  EXPECT_EQ(server.user(), "user");
}

TEST(ScramTest, WrongProofFails) {
  ScramCredential c = CredentialFromSaltedPassword(
      ScramMechanism::kSha256,
      SaltPassword(ScramMechanism::kSha256, "not-pencil", *Base64Decode(kSalt), 4096),
      *Base64Decode(kSalt), 4096);
  ScramServer server(ScramMechanism::kSha256, Only("user", c), kServerNonce);
  std::string out;
  ASSERT_TRUE(server.Step(kClientFirst, &out).ok());
  Status st = server.Step(kClientFinal, &out);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("Invalid user credentials"), std::string::npos);
  EXPECT_FALSE(server.done());
}

TEST(ScramTest, UnknownUserAndMalformedMessagesFail) {
  std::string out;
  {
    ScramServer s(ScramMechanism::kSha256, Only("other", PencilCredential()), kServerNonce);
    EXPECT_FALSE(s.Step(kClientFirst, &out).ok());
  }
  for (const char* bad : {"", "n", "y,,n=user,r=abc", "n,,r=abc", "n,,n=user", "n,,n=us=er,r=a",
                          "n,,n=user,r=a,ext=1", "p=tls-unique,,n=user,r=a", "n,a=bob,n=user,r=a"}) {
    ScramServer s(ScramMechanism::kSha256, Only("user", PencilCredential()), kServerNonce);
    EXPECT_FALSE(s.Step(bad, &out).ok()) << bad;
  }
  for (const char* bad : {"", "c=biws", "c=biws,r=wrong,p=AAAA", "c=eSws,r=x,p=AAAA",
                          "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=!!"}) {
    ScramServer s(ScramMechanism::kSha256, Only("user", PencilCredential()), kServerNonce);
    ASSERT_TRUE(s.Step(kClientFirst, &out).ok());
    EXPECT_FALSE(s.Step(bad, &out).ok()) << bad;
  }
}

TEST(ScramTest, CredentialTextRoundTripsInKafkaForm) {
  ScramCredential c = PencilCredential();
  std::string text = FormatScramCredential(c);
  EXPECT_EQ(text.rfind("salt=W22ZaJ0SNY7soEsUEjb6gQ==,stored_key=", 0), 0u) << text;
  EXPECT_NE(text.find(",iterations=4096"), std::string::npos);
  auto back = ParseScramCredential(text);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, c);
  EXPECT_FALSE(ParseScramCredential("salt=AAAA,iterations=1").ok());
  EXPECT_FALSE(ParseScramCredential("salt=!!,stored_key=AA==,server_key=AA==,iterations=1").ok());
}

TEST(ScramTest, StoreFileRoundTrips) {
  ScramCredentialMap m;
  m["alice"][ScramMechanism::kSha512] = PencilCredential();
  m["bob"][ScramMechanism::kSha256] = PencilCredential();
  auto back = DecodeScramCredentialFile(EncodeScramCredentialFile(m));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, m);
  EXPECT_FALSE(DecodeScramCredentialFile("{\"version\":2,\"users\":{}}").ok());
}

TEST(PlainTest, ChecksUserAndPassword) {
  auto users = std::make_shared<std::map<std::string, std::string>>(
      std::map<std::string, std::string>{{"alice", "secret"}});
  using namespace std::string_literals;
  EXPECT_TRUE(NewPlainExchange(users)->Evaluate("\0alice\0secret"s).complete);
  EXPECT_TRUE(NewPlainExchange(users)->Evaluate("alice\0alice\0secret"s).complete);
  EXPECT_EQ(NewPlainExchange(users)->Evaluate("\0alice\0secret"s).principal, "User:alice");
  for (std::string bad : {"\0alice\0wrong"s, "\0bob\0secret"s, "bob\0alice\0secret"s, "alice"s,
                          "\0alice\0secret\0"s, "\0\0secret"s, "\0alice\0"s, ""s}) {
    auto o = NewPlainExchange(users)->Evaluate(bad);
    EXPECT_FALSE(o.status.ok());
    EXPECT_FALSE(o.complete);
  }
}

TEST(JaasTest, PlainUsersFromKafkaStyleConfig) {
  auto m = ParseJaasConfig(
      "org.apache.kafka.common.security.plain.PlainLoginModule required "
      "username=\"admin\" password=\"admin-secret\" user_admin=\"admin-secret\" "
      "user_alice=\"al\\\"ice\" user_bob=bob-pw;");
  ASSERT_TRUE(m.ok()) << m.status().message();
  auto users = PlainUsers(*m);
  EXPECT_EQ(users.size(), 3u);
  EXPECT_EQ(users["alice"], "al\"ice");
  EXPECT_EQ(users["bob"], "bob-pw");
  EXPECT_FALSE(ParseJaasConfig("Foo required a=\"b\"").ok());  // no ';'
  EXPECT_FALSE(ParseJaasConfig("Foo maybe a=b;").ok());
  EXPECT_FALSE(ParseJaasConfig("Foo required a=\"b;").ok());
}

TEST(OAuthBearerTest, ParsesClientFirstMessage) {
  auto t = ParseOAuthBearerClientFirst("n,,\x01" "auth=Bearer abc.def.ghi\x01\x01");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t, "abc.def.ghi");
  t = ParseOAuthBearerClientFirst("n,a=bob,\x01host=x\x01" "auth=Bearer tok\x01" "ext=1\x01\x01");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t, "tok");
  for (const char* bad : {"", "n,,", "n,,auth=Bearer x", "n,,\x01" "auth=x\x01\x01",
                          "n,,\x01\x01", "y,,\x01" "auth=Bearer x\x01\x01", "n,,\x01=\x01\x01"})
    EXPECT_FALSE(ParseOAuthBearerClientFirst(bad).ok()) << bad;
}

}  // namespace
}  // namespace headrace::broker::sasl
