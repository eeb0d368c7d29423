// InterBrokerSecurity::Build: what a secured inter-broker listener needs as
// a client, and the one-line start-up errors when it is incomplete.
#include "broker/replication/inter_broker_security.h"

#include <gtest/gtest.h>

#include "broker/config/broker_config.h"
#include "broker/security/sasl/sasl_config.h"
#include "broker/config/ssl_config.h"

namespace headrace::broker::replication {
namespace {

constexpr char kScramJaas[] =
    "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"broker\" "
    "password=\"pw\";";

Result<std::shared_ptr<const InterBrokerSecurity>> Build(std::map<std::string, std::string> props) {
  props.emplace("listeners", "INTERNAL://127.0.0.1:0,CLIENT://127.0.0.1:0");
  props.emplace("inter.broker.listener.name", "INTERNAL");
  props.emplace("zookeeper.connect", "127.0.0.1:2181");
  props.emplace("log.dirs", "/tmp/unused");
  sasl::SaslConfig sasl;
  HR_RETURN_IF_ERROR(sasl.Extract(props));
  SslConfig ssl;
  HR_RETURN_IF_ERROR(ssl.Extract(props));
  BrokerConfig config;
  HR_RETURN_IF_ERROR(config.SetAll(props));
  HR_RETURN_IF_ERROR(config.Validate());
  return InterBrokerSecurity::Build(config, ssl, sasl);
}

std::string Error(std::map<std::string, std::string> props) {
  auto r = Build(std::move(props));
  return r.ok() ? "OK" : r.status().message();
}

TEST(InterBrokerSecurityTest, PlaintextNeedsNothing) {
  auto r = Build({{"listener.security.protocol.map", "INTERNAL:PLAINTEXT,CLIENT:PLAINTEXT"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE((*r)->uses_tls());
  EXPECT_FALSE((*r)->uses_sasl());
  EXPECT_EQ((*r)->Describe(), "PLAINTEXT");
}

TEST(InterBrokerSecurityTest, SaslPlaintextTakesTheListenersJaasLogin) {
  auto r = Build({{"listener.security.protocol.map", "INTERNAL:SASL_PLAINTEXT,CLIENT:PLAINTEXT"},
                  {"sasl.mechanism.inter.broker.protocol", "SCRAM-SHA-512"},
                  {"listener.name.internal.scram-sha-512.sasl.jaas.config", kScramJaas}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)->sasl_mechanism, "SCRAM-SHA-512");
  EXPECT_EQ((*r)->sasl_username, "broker");
  EXPECT_EQ((*r)->sasl_password, "pw");
  EXPECT_EQ((*r)->Describe(), "SASL_PLAINTEXT (SCRAM-SHA-512 as broker)");
}

TEST(InterBrokerSecurityTest, UnsupportedOrIncompleteSaslSettingsStopTheStart) {
  const std::map<std::string, std::string> sasl = {
      {"listener.security.protocol.map", "INTERNAL:SASL_PLAINTEXT,CLIENT:PLAINTEXT"},
      {"sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-256,OAUTHBEARER"}};
  // Kafka's default GSSAPI.
  EXPECT_NE(Error(sasl).find("sasl.mechanism.inter.broker.protocol: GSSAPI (Kafka's default) "
                             "is not supported"),
            std::string::npos)
      << Error(sasl);
  auto with = [&](std::map<std::string, std::string> extra) {
    extra.insert(sasl.begin(), sasl.end());
    return Error(extra);
  };
  EXPECT_NE(with({{"sasl.mechanism.inter.broker.protocol", "OAUTHBEARER"}})
                .find("OAUTHBEARER cannot be used between brokers"),
            std::string::npos);
  EXPECT_NE(with({{"sasl.mechanism.inter.broker.protocol", "SCRAM-SHA-512"}})
                .find("SCRAM-SHA-512 is not in inter-broker listener INTERNAL's "
                      "sasl.enabled.mechanisms"),
            std::string::npos);
  EXPECT_NE(with({{"sasl.mechanism.inter.broker.protocol", "PLAIN"}})
                .find("listener.name.internal.plain.sasl.jaas.config: needed"),
            std::string::npos);
  EXPECT_NE(with({{"sasl.mechanism.inter.broker.protocol", "PLAIN"},
                  {"listener.name.internal.plain.sasl.jaas.config",
                   "org.apache.kafka.common.security.plain.PlainLoginModule required "
                   "user_broker=\"pw\";"}})
                .find("no login module with username"),
            std::string::npos);
}

TEST(InterBrokerSecurityTest, TlsListenerNeedsItsKeystore) {
  std::string e = Error({{"listener.security.protocol.map", "INTERNAL:SSL,CLIENT:PLAINTEXT"}});
  EXPECT_NE(e.find("listener INTERNAL"), std::string::npos) << e;
  EXPECT_NE(e.find("ssl.keystore.location"), std::string::npos) << e;
  EXPECT_NE(Error({{"ssl.endpoint.identification.algorithm", "ldaps"}})
                .find("ssl.endpoint.identification.algorithm: must be https or empty"),
            std::string::npos);
}

}  // namespace
}  // namespace headrace::broker::replication
