#include "broker/security/sasl/sasl_config.h"

#include <gtest/gtest.h>

#include "broker/security/sasl/sasl_server.h"

namespace headrace::broker::sasl {
namespace {

TEST(SaslConfigTest, MostSpecificListenerKeyWins) {
  std::map<std::string, std::string> props = {
      {"connections.max.reauth.ms", "1000"},
      {"listener.name.sasl_plaintext.connections.max.reauth.ms", "2000"},
      {"listener.name.sasl_plaintext.plain.connections.max.reauth.ms", "3000"},
      {"listener.name.sasl_plaintext.plain.sasl.jaas.config",
       "org.apache.kafka.common.security.plain.PlainLoginModule required user_alice=\"pw\";"},
      {"listener.name.sasl_plaintext.sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-512"},
      {"log.dirs", "/tmp/x"},
  };
  SaslConfig c;
  ASSERT_TRUE(c.Extract(props).ok());
  EXPECT_EQ(props.size(), 1u);  // only log.dirs is left for the broker
  EXPECT_EQ(c.Lookup("SASL_PLAINTEXT", "PLAIN", "connections.max.reauth.ms"), "3000");
  EXPECT_EQ(c.Lookup("SASL_PLAINTEXT", "SCRAM-SHA-512", "connections.max.reauth.ms"), "2000");
  EXPECT_EQ(c.Lookup("OTHER", "PLAIN", "connections.max.reauth.ms"), "1000");
  EXPECT_EQ(c.Lookup("OTHER", "", "sasl.oauthbearer.clock.skew.seconds"), "30");

  auto server = SaslServer::Create(c, {"SASL_PLAINTEXT"});
  ASSERT_TRUE(server.ok()) << server.status().message();
  const ListenerSasl* l = (*server)->ForListener("SASL_PLAINTEXT");
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->mechanisms, (std::vector<std::string>{"PLAIN", "SCRAM-SHA-512"}));
  EXPECT_EQ(l->plain_users->at("alice"), "pw");
  EXPECT_EQ(l->max_reauth_ms.at("PLAIN"), 3000);
  EXPECT_EQ((*server)->Start("SASL_PLAINTEXT", "OAUTHBEARER"), nullptr);  // not enabled
  EXPECT_NE((*server)->Start("SASL_PLAINTEXT", "PLAIN"), nullptr);
  EXPECT_EQ((*server)->ForListener("PLAINTEXT"), nullptr);
}

TEST(SaslConfigTest, BadValuesNameTheKey) {
  for (auto [k, v] : std::map<std::string, std::string>{
           {"sasl.enabled.mechanisms", "GSSAPI"},
           {"listener.name.x.sasl.enabled.mechanisms", "PLAIN,NOPE"},
           {"connections.max.reauth.ms", "-1"},
           {"listener.name.x.oauthbearer.sasl.oauthbearer.clock.skew.seconds", "x"}}) {
    std::map<std::string, std::string> props = {{k, v}};
    SaslConfig c;
    Status st = c.Extract(props);
    EXPECT_FALSE(st.ok()) << k;
    EXPECT_NE(st.message().find(k), std::string::npos) << st.message();
  }
  SaslConfig c;
  std::map<std::string, std::string> props = {
      {"listener.name.sasl_plaintext.plain.sasl.jaas.config", "Broken required a=\"b"}};
  ASSERT_TRUE(c.Extract(props).ok());
  EXPECT_FALSE(SaslServer::Create(c, {"SASL_PLAINTEXT"}).ok());
  EXPECT_TRUE(IsSaslConfigKey("listener.name.foo.scram-sha-256.connections.max.reauth.ms"));
  EXPECT_FALSE(IsSaslConfigKey("listener.name.foo.ssl.keystore.location"));
}

}  // namespace
}  // namespace headrace::broker::sasl
