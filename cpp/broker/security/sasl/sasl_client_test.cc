// The client side of SASL (inter-broker authentication): the SCRAM client
// against RFC 7677's vector and against this broker's own ScramServer,
// PLAIN tokens against the PLAIN exchange, and the JAAS username/password a
// broker logs in with.
#include "broker/security/sasl/sasl_client.h"

#include <gtest/gtest.h>

#include "broker/security/sasl/base64.h"
#include "broker/security/sasl/jaas.h"
#include "broker/security/sasl/mechanisms.h"
#include "broker/security/sasl/scram.h"

namespace headrace::broker::sasl {
namespace {

ScramServer::Lookup Only(const std::string& name, ScramCredential c) {
  return [name, c](const std::string& user) -> std::optional<ScramCredential> {
    if (user == name) return c;
    return std::nullopt;
  };
}

ScramCredential CredentialOf(ScramMechanism m, const std::string& password,
                             const std::string& salt = "0123456789abcdef", int32_t iterations = 4096) {
  return CredentialFromSaltedPassword(m, SaltPassword(m, password, salt, iterations), salt,
                                      iterations);
}

TEST(ScramClientTest, Rfc7677TestVector) {
  ScramClient client(ScramMechanism::kSha256, "user", "pencil", "rOprNGfwEbeRWgbNEkqO");
  EXPECT_EQ(client.ClientFirst(), "n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
  auto final_msg = client.ClientFinal(
      "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096");
  ASSERT_TRUE(final_msg.ok()) << final_msg.status().message();
  EXPECT_EQ(*final_msg,
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
            "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=");
  EXPECT_TRUE(client.VerifyServerFinal("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=").ok());
  EXPECT_FALSE(client.VerifyServerFinal("v=AAAATRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=").ok());
}

// Runs a whole exchange between SaslClient and this broker's server side.
Status Exchange(ScramMechanism m, const std::string& user, const std::string& password,
                const ScramCredential& stored, const std::string& stored_user) {
  ScramServer server(m, Only(stored_user, stored));
  auto client = SaslClient::Create(ScramMechanismName(m), user, password);
  if (!client.ok()) return client.status();
  std::string token = (*client)->Start();
  for (int round = 0; round < 3; ++round) {
    std::string answer;
    HR_RETURN_IF_ERROR(server.Step(token, &answer));
    bool done = false;
    HR_ASSIGN_OR_RETURN(token, (*client)->Step(answer, &done));
    if (done) return server.done() ? Status::OK() : Status::Corruption("server not done");
  }
  return Status::Corruption("no end");
}

TEST(ScramClientTest, AuthenticatesAgainstTheServerForBothMechanisms) {
  for (ScramMechanism m : {ScramMechanism::kSha256, ScramMechanism::kSha512}) {
    Status st = Exchange(m, "broker", "broker-secret", CredentialOf(m, "broker-secret"), "broker");
    EXPECT_TRUE(st.ok()) << ScramMechanismName(m) << ": " << st.message();
  }
  // A user name with ',' and '=' travels escaped and is decoded by the server.
  ScramMechanism m = ScramMechanism::kSha512;
  EXPECT_TRUE(Exchange(m, "CN=b,O=x", "pw", CredentialOf(m, "pw"), "CN=b,O=x").ok());
}

TEST(ScramClientTest, WrongPasswordIsRefusedByTheServer) {
  ScramMechanism m = ScramMechanism::kSha512;
  Status st = Exchange(m, "broker", "wrong", CredentialOf(m, "broker-secret"), "broker");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("Invalid user credentials"), std::string::npos) << st.message();
  EXPECT_FALSE(Exchange(m, "nobody", "broker-secret", CredentialOf(m, "broker-secret"), "broker").ok());
}

TEST(ScramClientTest, RefusesBadServerMessages) {
  ScramClient client(ScramMechanism::kSha256, "u", "p", "abc");
  client.ClientFirst();
  EXPECT_FALSE(client.ClientFinal("garbage").ok());
  EXPECT_FALSE(client.ClientFinal("r=xyz123,s=c2FsdA==,i=4096").ok());  // not our nonce
  EXPECT_FALSE(client.ClientFinal("r=abc123,s=c2FsdA==,i=100").ok());   // too few iterations
  EXPECT_FALSE(client.ClientFinal("r=abc123,s=!!,i=4096").ok());        // bad salt
  ASSERT_TRUE(client.ClientFinal("r=abc123,s=c2FsdA==,i=4096").ok());
  Status e = client.VerifyServerFinal("e=invalid-proof");
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.message().find("invalid-proof"), std::string::npos);
}

// Malformed and mutated server messages (a hostile or broken peer broker):
// refused or accepted, never a crash, and a signature never verifies.
TEST(ScramClientTest, MutatedServerMessagesNeverCrashOrVerify) {
  const std::string first =
      "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
  const std::string final_msg = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  auto next = [&] {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return seed;
  };
  int verified = 0;
  for (int i = 0; i < 1000; ++i) {
    std::string f = first, v = final_msg;
    std::string& target = i % 2 == 0 ? f : v;
    const int edits = 1 + static_cast<int>(next() % 4);
    for (int e = 0; e < edits && !target.empty(); ++e) {
      const size_t at = next() % target.size();
      switch (next() % 3) {
        case 0: target[at] = static_cast<char>(next() & 0xff); break;
        case 1: target.erase(at, 1 + next() % 8); break;
        default: target.insert(at, 1, ",="[next() % 2]); break;
      }
    }
    ScramClient client(ScramMechanism::kSha256, "user", "pencil", "rOprNGfwEbeRWgbNEkqO");
    client.ClientFirst();
    auto fin = client.ClientFinal(f);
    if (fin.ok() && client.VerifyServerFinal(v).ok()) ++verified;
  }
  // Only mutations that left both messages' meaning intact may verify
  // (e.g. a changed server nonce suffix changes the AuthMessage: no).
  EXPECT_LT(verified, 10);
  ScramClient client(ScramMechanism::kSha512, "u", "p", "n");
  client.ClientFirst();
  EXPECT_FALSE(client.VerifyServerFinal(final_msg).ok());  // before any server-first
  EXPECT_FALSE(client.ClientFinal("").ok());
  EXPECT_FALSE(client.ClientFinal("r=n1,s=,i=99999999999999").ok());
}

TEST(PlainClientTest, TokenAuthenticatesAgainstThePlainExchange) {
  auto users = std::make_shared<const std::map<std::string, std::string>>(
      std::map<std::string, std::string>{{"broker", "s3cret"}});
  auto client = SaslClient::Create("PLAIN", "broker", "s3cret");
  ASSERT_TRUE(client.ok());
  auto server = NewPlainExchange(users);
  auto outcome = server->Evaluate((*client)->Start());
  ASSERT_TRUE(outcome.status.ok()) << outcome.status.message();
  EXPECT_TRUE(outcome.complete);
  EXPECT_EQ(outcome.principal, "User:broker");
  bool done = false;
  ASSERT_TRUE((*client)->Step(outcome.response, &done).ok());
  EXPECT_TRUE(done);
  auto wrong = SaslClient::Create("PLAIN", "broker", "nope");
  EXPECT_FALSE(NewPlainExchange(users)->Evaluate((*wrong)->Start()).status.ok());
}

TEST(SaslClientTest, OnlyPlainAndScramHaveAClientSide) {
  EXPECT_TRUE(HasClientMechanism("PLAIN"));
  EXPECT_TRUE(HasClientMechanism("SCRAM-SHA-256"));
  EXPECT_TRUE(HasClientMechanism("SCRAM-SHA-512"));
  EXPECT_FALSE(HasClientMechanism("OAUTHBEARER"));
  EXPECT_FALSE(HasClientMechanism("GSSAPI"));
  auto bad = SaslClient::Create("GSSAPI", "u", "p");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("GSSAPI"), std::string::npos);
}

TEST(JaasLoginTest, UsernameAndPasswordOfTheLoginModule) {
  auto plain = ParseJaasConfig(
      "org.apache.kafka.common.security.plain.PlainLoginModule required "
      "username=\"admin\" password=\"adm\\\"in-secret\" user_admin=\"x\" user_alice=\"y\";");
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  auto login = LoginCredentials(*plain);
  ASSERT_TRUE(login.ok()) << login.status().message();
  EXPECT_EQ(login->username, "admin");
  EXPECT_EQ(login->password, "adm\"in-secret");
  EXPECT_EQ(PlainUsers(*plain).size(), 2u);

  auto scram = ParseJaasConfig(
      "org.apache.kafka.common.security.scram.ScramLoginModule required username=broker "
      "password=\"b-pw\";");
  ASSERT_TRUE(scram.ok());
  ASSERT_TRUE(LoginCredentials(*scram).ok());
  EXPECT_EQ(LoginCredentials(*scram)->username, "broker");
  EXPECT_EQ(LoginCredentials(*scram)->password, "b-pw");

  auto no_user = ParseJaasConfig("x.PlainLoginModule required user_a=\"b\";");
  ASSERT_TRUE(no_user.ok());
  EXPECT_FALSE(LoginCredentials(*no_user).ok());
  auto no_password = ParseJaasConfig("x.ScramLoginModule required username=\"b\";");
  ASSERT_TRUE(no_password.ok());
  Status st = LoginCredentials(*no_password).status();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("no password"), std::string::npos);
}

}  // namespace
}  // namespace headrace::broker::sasl
