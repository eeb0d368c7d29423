#include "broker/config/ssl_config.h"

#include <gtest/gtest.h>

#include <map>

namespace headrace::broker {
namespace {

TEST(SslConfigTest, ListenerOverridesApplyToThatListenerOnly) {
  std::map<std::string, std::string> props = {
      {"ssl.keystore.type", "PEM"},
      {"ssl.keystore.key", "KEY"},
      {"ssl.keystore.certificate.chain", "CHAIN"},
      {"ssl.truststore.type", "PEM"},
      {"ssl.truststore.certificates", "CAS"},
      {"listener.name.mtls.ssl.client.auth", "required"},
      {"listener.name.mtls.ssl.enabled.protocols", "TLSv1.3"},
      {"listener.name.internal.plain.sasl.jaas.config", "left for SASL"},
      {"num.partitions", "3"},
  };
  SslConfig c;
  ASSERT_TRUE(c.Extract(props).ok());
  // Only ssl keys and listener ssl overrides are taken.
  EXPECT_EQ(props.size(), 2u);
  EXPECT_TRUE(props.count("listener.name.internal.plain.sasl.jaas.config"));
  auto ssl = c.TlsSettingsFor("SSL");
  ASSERT_TRUE(ssl.ok()) << ssl.status().ToString();
  EXPECT_EQ(ssl->client_auth, net::ClientAuth::kNone);
  EXPECT_EQ(ssl->key_pem, "KEY");
  EXPECT_EQ(ssl->trust_pem, "CAS");
  EXPECT_EQ(ssl->protocols, (std::vector<std::string>{"TLSv1.2", "TLSv1.3"}));
  auto mtls = c.TlsSettingsFor("MTLS");
  ASSERT_TRUE(mtls.ok());
  EXPECT_EQ(mtls->client_auth, net::ClientAuth::kRequired);
  EXPECT_EQ(mtls->protocols, (std::vector<std::string>{"TLSv1.3"}));
  EXPECT_TRUE(SslConfig::IsListenerOverride("listener.name.x.ssl.key.password"));
  EXPECT_FALSE(SslConfig::IsListenerOverride("listener.name.x.sasl.enabled.mechanisms"));
}

TEST(SslConfigTest, ErrorsNameTheListenerAndKey) {
  SslConfig c;
  EXPECT_EQ(c.TlsSettingsFor("SSL").status().message(),
            "listener SSL: a TLS listener needs ssl.keystore.location (or ssl.keystore.key and "
            "ssl.keystore.certificate.chain) with ssl.keystore.type=PEM");
  ASSERT_TRUE(c.Set("ssl.keystore.location", "/nonexistent.pem").ok());
  EXPECT_EQ(c.TlsSettingsFor("SSL").status().message(),
            "listener SSL: ssl.keystore.type JKS is not supported; use PEM");
  ASSERT_TRUE(c.Set("ssl.keystore.type", "pem").ok());
  EXPECT_EQ(c.TlsSettingsFor("SSL").status().message(),
            "listener SSL: ssl.keystore.location: cannot read /nonexistent.pem");
  EXPECT_EQ(c.Set("ssl.client.auth", "always").message(),
            "ssl.client.auth: must be none, requested or required, got 'always'");
  EXPECT_EQ(c.Set("listener.name.a.ssl.enabled.protocols", "TLSv1").message(),
            "ssl.enabled.protocols: TLSv1 is not supported (TLSv1.2, TLSv1.3)");
  EXPECT_FALSE(c.Set("ssl.principal.mapping.rules", "RULE:^CN=(.*)$/$1/").ok());
  ASSERT_TRUE(c.Set("ssl.keystore.key", "K").ok());
  ASSERT_TRUE(c.Set("ssl.keystore.location", "").ok());
  ASSERT_TRUE(c.Set("ssl.client.auth", "required").ok());
  EXPECT_EQ(c.TlsSettingsFor("SSL").status().message(),
            "listener SSL: ssl.client.auth=required needs a truststore (ssl.truststore.location "
            "or ssl.truststore.certificates)");
}

}  // namespace
}  // namespace headrace::broker
