#include "broker/config/broker_config.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "broker/config/dynamic_broker_config.h"
#include "broker/config/dynamic_family_config.h"
#include "broker/base/kafka_error.h"

namespace headrace::broker {
namespace {

TEST(BrokerConfigTest, DefaultsMatchTheDocumentation) {
  BrokerConfig c;
  EXPECT_EQ(c.node_id, 0);
  ASSERT_EQ(c.listeners.size(), 1u);
  EXPECT_EQ(c.listeners[0].ToString(), "PLAINTEXT://127.0.0.1:9092");
  EXPECT_EQ(c.effective_advertised_host(), "127.0.0.1");
  EXPECT_EQ(c.effective_advertised_port(), 9092);
  EXPECT_TRUE(c.auto_create_topics_enable);
  EXPECT_EQ(c.num_partitions, 1);
  EXPECT_EQ(c.default_replication_factor, 1);
  EXPECT_EQ(c.socket_request_max_bytes, 104857600);
  EXPECT_EQ(c.socket_send_buffer_bytes, -1);
  EXPECT_EQ(c.socket_receive_buffer_bytes, -1);
  EXPECT_EQ(c.log_retention_check_interval_ms, 300000);
  EXPECT_TRUE(c.acks_all_fsync);
  EXPECT_EQ(c.flush_threads, 4);
  EXPECT_TRUE(c.Validate().ok());
}

TEST(BrokerConfigTest, FlushThreadsIsBetween1And64) {
  BrokerConfig c;
  ASSERT_TRUE(c.Set("headrace.flush.threads", "1").ok());
  EXPECT_EQ(c.flush_threads, 1);
  EXPECT_EQ(c.Set("headrace.flush.threads", "0").message(),
            "headrace.flush.threads: must be an integer between 1 and 64");
  EXPECT_FALSE(c.Set("headrace.flush.threads", "65").ok());
  EXPECT_EQ(c.flush_threads, 1);
}

TEST(BrokerConfigTest, ReplicationDefaultsAreKafkas) {
  BrokerConfig c;
  EXPECT_EQ(c.replica_lag_time_max_ms, 30000);
  EXPECT_EQ(c.replica_fetch_max_bytes, 1048576);
  EXPECT_EQ(c.replica_fetch_response_max_bytes, 10485760);
  EXPECT_EQ(c.replica_fetch_wait_max_ms, 500);
  EXPECT_EQ(c.replica_fetch_min_bytes, 1);
  EXPECT_EQ(c.replica_fetch_backoff_ms, 1000);
  EXPECT_EQ(c.num_replica_fetchers, 1);
  ASSERT_TRUE(c.SetAll({{"replica.lag.time.max.ms", "10000"},
                        {"replica.fetch.max.bytes", "4096"},
                        {"replica.fetch.response.max.bytes", "65536"},
                        {"replica.fetch.wait.max.ms", "100"},
                        {"replica.fetch.min.bytes", "2"},
                        {"replica.fetch.backoff.ms", "50"},
                        {"num.replica.fetchers", "2"}})
                  .ok());
  EXPECT_EQ(c.replica_lag_time_max_ms, 10000);
  EXPECT_EQ(c.replica_fetch_max_bytes, 4096);
  EXPECT_EQ(c.replica_fetch_response_max_bytes, 65536);
  EXPECT_EQ(c.replica_fetch_wait_max_ms, 100);
  EXPECT_EQ(c.replica_fetch_min_bytes, 2);
  EXPECT_EQ(c.replica_fetch_backoff_ms, 50);
  EXPECT_EQ(c.num_replica_fetchers, 2);
  EXPECT_FALSE(c.Set("replica.fetch.min.bytes", "0").ok());
  EXPECT_FALSE(c.Set("replica.lag.time.max.ms", "-1").ok());
}

// replica.socket.timeout.ms (issue 37): Kafka's default, never below
// replica.fetch.wait.max.ms.
TEST(BrokerConfigTest, ReplicaSocketTimeoutIsAtLeastTheFetchWait) {
  BrokerConfig c;
  EXPECT_EQ(c.replica_socket_timeout_ms, 30000);
  ASSERT_TRUE(c.SetAll({{"replica.socket.timeout.ms", "2000"}}).ok());
  EXPECT_EQ(c.replica_socket_timeout_ms, 2000);
  EXPECT_TRUE(c.Validate().ok());
  ASSERT_TRUE(c.SetAll({{"replica.socket.timeout.ms", "400"}}).ok());
  Status st = c.Validate();
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("replica.socket.timeout.ms"), std::string::npos) << st.message();
  EXPECT_FALSE(c.Set("replica.socket.timeout.ms", "0").ok());
}

TEST(BrokerConfigTest, SetsKafkaPropertyNames) {
  BrokerConfig c;
  ASSERT_TRUE(c.SetAll({{"node.id", "3"},
                        {"listeners", "PLAINTEXT://0.0.0.0:19092"},
                        {"advertised.listeners", "PLAINTEXT://broker1:29092"},
                        {"log.dirs", "/var/lib/headrace"},
                        {"num.partitions", "6"},
                        {"auto.create.topics.enable", "false"},
                        {"log.retention.hours", "1"},
                        {"log.segment.bytes", "1048576"},
                        {"log.message.timestamp.type", "LogAppendTime"},
                        {"headrace.group.commit.linger.us", "200"},
                        {"socket.send.buffer.bytes", "16777216"},
                        {"socket.receive.buffer.bytes", "1048576"}})
                  .ok());
  EXPECT_EQ(c.node_id, 3);
  ASSERT_EQ(c.listeners.size(), 1u);
  EXPECT_EQ(c.listeners[0].host, "0.0.0.0");
  EXPECT_EQ(c.listeners[0].port, 19092);
  EXPECT_EQ(c.effective_advertised_host(), "broker1");
  EXPECT_EQ(c.effective_advertised_port(), 29092);
  EXPECT_EQ(c.data_dir, "/var/lib/headrace");
  EXPECT_EQ(c.num_partitions, 6);
  EXPECT_FALSE(c.auto_create_topics_enable);
  EXPECT_EQ(c.log_defaults.retention_ms, 3600000);
  EXPECT_EQ(c.log_defaults.segment_bytes, 1048576);
  EXPECT_EQ(c.log_defaults.timestamp_type, TimestampType::kLogAppendTime);
  EXPECT_EQ(c.group_commit_linger_us, 200);
  EXPECT_EQ(c.socket_send_buffer_bytes, 16777216);
  EXPECT_EQ(c.socket_receive_buffer_bytes, 1048576);

  TopicDefaults d = c.topic_defaults();
  EXPECT_TRUE(d.static_keys.count("retention.ms"));
  EXPECT_TRUE(d.static_keys.count("segment.bytes"));
  EXPECT_FALSE(d.static_keys.count("flush.ms"));
}

TEST(BrokerConfigTest, RetentionMsWinsOverHours) {
  BrokerConfig c;
  ASSERT_TRUE(c.SetAll({{"log.retention.hours", "5"}, {"log.retention.ms", "1234"}}).ok());
  EXPECT_EQ(c.log_defaults.retention_ms, 1234);
}

TEST(BrokerConfigTest, ErrorsNameTheKey) {
  BrokerConfig c;
  Status s = c.Set("num.partitions", "0");
  EXPECT_EQ(s.message(), "num.partitions: must be an integer between 1 and 2147483647");
  s = c.Set("log.retention.ms", "-5");
  EXPECT_EQ(s.message(), "log.retention.ms: must be an integer >= -1");
  s = c.Set("auto.create.topics.enable", "yes");
  EXPECT_EQ(s.message(), "auto.create.topics.enable: must be true or false");
  EXPECT_EQ(c.Set("socket.send.buffer.bytes", "-2").message(),
            "socket.send.buffer.bytes: must be an integer between -1 and 2147483647");
  EXPECT_EQ(c.Set("bogus.key", "1").code(), StatusCode::kNotFound);
  std::set<std::string> ignored;
  EXPECT_TRUE(c.SetAll({{"bogus.key", "1"}}, &ignored).ok());
  EXPECT_EQ(ignored, std::set<std::string>{"bogus.key"});
}

}  // namespace
}  // namespace headrace::broker

namespace headrace::broker {
namespace {

TEST(ListenerConfigTest, NamedListenersAndTheBareForm) {
  auto l = ParseListeners("listeners", "PLAINTEXT://0.0.0.0:9092, ssl://[::1]:9093,internal://localhost:0");
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  ASSERT_EQ(l->size(), 3u);
  EXPECT_EQ((*l)[0], (Listener{"PLAINTEXT", "0.0.0.0", 9092}));
  EXPECT_EQ((*l)[1], (Listener{"SSL", "::1", 9093}));
  EXPECT_EQ((*l)[1].ToString(), "SSL://[::1]:9093");
  EXPECT_EQ((*l)[2], (Listener{"INTERNAL", "localhost", 0}));
  EXPECT_TRUE(ParseListeners("listeners", "PLAINTEXT://:9092").ok());  // every interface
  auto bare = ParseListeners("listeners", "a:0");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ((*bare)[0].name, "PLAINTEXT");  // the bare form
}

TEST(ListenerConfigTest, UnservableListenersAreErrorsNamingThem) {
  auto msg = [](std::string_view v) { return ParseListeners("listeners", v).status().message(); };
  EXPECT_EQ(msg("PLAINTEXT://h:9092,PLAINTEXT://g:9092"),
            "listeners: PLAINTEXT://g:9092: port 9092 is also used by PLAINTEXT://h:9092");
  EXPECT_EQ(msg("PLAINTEXT://h:0,PLAINTEXT://g:0"),
            "listeners: PLAINTEXT://g:0: listener name PLAINTEXT is used twice (each listener "
            "needs its own name)");
  EXPECT_EQ(msg("BAD-NAME://h:1"), "listeners: BAD-NAME://h:1: a listener name is letters, digits and '_'");
  EXPECT_EQ(msg("h:70000"), "listeners: h:70000: port must be an integer between 0 and 65535");
  EXPECT_EQ(msg("h"), "listeners: h: expected [PLAINTEXT://]host:port");
  EXPECT_EQ(msg("a:1,,b:2"), "listeners: empty listener in 'a:1,,b:2'");
  EXPECT_EQ(msg("::1:9092"), "listeners: ::1:9092: an IPv6 host must be in brackets, e.g. [::1]:9092");
}

TEST(ListenerConfigTest, SecurityProtocolMapNamesEveryListener) {
  BrokerConfig c;
  ASSERT_TRUE(c.Set("listeners", "PLAINTEXT://h:0,SSL://h:0,SASL_SSL://h:0,SASL_PLAINTEXT://h:0").ok());
  ASSERT_TRUE(c.Validate().ok());  // Kafka's default map knows the four names
  EXPECT_EQ(c.protocol_of(c.listeners[1]), net::SecurityProtocol::kSsl);
  EXPECT_EQ(c.protocol_of(c.listeners[2]), net::SecurityProtocol::kSaslSsl);
  EXPECT_EQ(c.protocol_of(c.listeners[3]), net::SecurityProtocol::kSaslPlaintext);

  ASSERT_TRUE(c.Set("listeners", "PLAINTEXT://h:0,INTERNAL://h:0").ok());
  EXPECT_EQ(c.Validate().message(),
            "listeners: no security protocol for listener INTERNAL in "
            "listener.security.protocol.map");
  ASSERT_TRUE(c.Set("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,internal:ssl").ok());
  ASSERT_TRUE(c.Validate().ok());
  EXPECT_EQ(c.protocol_of(c.listeners[1]), net::SecurityProtocol::kSsl);
  EXPECT_EQ(*BrokerConfigValue(c, "listener.security.protocol.map"), "INTERNAL:SSL,PLAINTEXT:PLAINTEXT");

  EXPECT_EQ(c.Set("listener.security.protocol.map", "X:TLS").message(),
            "listener.security.protocol.map: X:TLS: unknown security protocol TLS (PLAINTEXT, "
            "SSL, SASL_PLAINTEXT or SASL_SSL)");
  EXPECT_EQ(c.Set("listener.security.protocol.map", "X").message(),
            "listener.security.protocol.map: X: expected NAME:PROTOCOL");
  EXPECT_FALSE(c.Set("security.inter.broker.protocol", "TLS").ok());
}

TEST(ListenerConfigTest, AdvertisedListenersPerName) {
  BrokerConfig c;
  ASSERT_TRUE(c.Set("listeners", "PLAINTEXT://0.0.0.0:9092,SSL://0.0.0.0:9093").ok());
  ASSERT_TRUE(c.Set("advertised.listeners", "SSL://broker.example:19093").ok());
  ASSERT_TRUE(c.Validate().ok());
  EXPECT_EQ(c.advertised_for("SSL")->ToString(), "SSL://broker.example:19093");
  EXPECT_EQ(c.advertised_for("PLAINTEXT")->ToString(), "PLAINTEXT://0.0.0.0:9092");
  EXPECT_EQ(c.advertised_for("OTHER"), nullptr);
  ASSERT_TRUE(c.Set("advertised.listeners", "OTHER://x:1").ok());
  EXPECT_EQ(c.Validate().message(), "advertised.listeners: listener OTHER is not one of listeners");
}

// A dynamic per-broker advertised.listeners value is checked against the
// broker's own listeners; the key is per-broker dynamic, as Kafka's.
TEST(ListenerConfigTest, DynamicAdvertisedListenersAreCheckedAgainstTheListeners) {
  BrokerConfig c;
  ASSERT_TRUE(c.Set("listeners", "PLAINTEXT://0.0.0.0:9092,SSL://0.0.0.0:9093").ok());
  auto ok = c.ParseAdvertisedListeners("SSL://edge.example:443,PLAINTEXT://edge.example:80");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  ASSERT_EQ(ok->size(), 2u);
  EXPECT_EQ((*ok)[0].ToString(), "SSL://edge.example:443");
  EXPECT_EQ(c.ParseAdvertisedListeners("OTHER://x:1").status().message(),
            "advertised.listeners: listener OTHER is not one of listeners");
  EXPECT_FALSE(c.ParseAdvertisedListeners("PLAINTEXT://x:70000").ok());
  EXPECT_TRUE(c.advertised_listeners.empty());  // parsing changes nothing
  EXPECT_EQ(FindBrokerKey("advertised.listeners")->mode, UpdateMode::kPerBroker);
}

TEST(BrokerConfigTest, ConnectionAndPartitionLimits) {
  BrokerConfig c;
  EXPECT_EQ(c.max_connections_per_ip, 2147483647);
  EXPECT_EQ(c.connections_max_idle_ms, 600000);
  EXPECT_EQ(c.queued_max_request_bytes, 512 * 1024 * 1024);
  EXPECT_EQ(c.max_partitions, 10000);
  EXPECT_EQ(c.max_partitions_per_request, 5000);
  ASSERT_TRUE(c.SetAll({{"max.connections.per.ip", "5"},
                        {"connections.max.idle.ms", "-1"},
                        {"queued.max.request.bytes", "-1"},
                        {"headrace.max.partitions", "50"},
                        {"headrace.max.partitions.per.request", "7"}})
                  .ok());
  EXPECT_EQ(c.max_connections_per_ip, 5);
  EXPECT_EQ(c.connections_max_idle_ms, -1);
  EXPECT_EQ(c.queued_max_request_bytes, -1);
  EXPECT_EQ(c.max_partitions, 50);
  EXPECT_EQ(c.max_partitions_per_request, 7);
  EXPECT_EQ(c.Set("queued.max.request.bytes", "0").message(),
            "queued.max.request.bytes: must be -1 (no limit) or >= 1");
  EXPECT_EQ(c.Set("headrace.max.partitions", "0").message(),
            "headrace.max.partitions: must be an integer between 1 and 2147483647");
}

// The table: every row accepts its own default, names a type and a doc,
// and every topic key with a broker synonym has a row.
TEST(BrokerConfigTableTest, RowsAreConsistent) {
  const auto& table = BrokerConfigKeyTable();
  ASSERT_FALSE(table.empty());
  for (size_t i = 1; i < table.size(); ++i) EXPECT_LT(table[i - 1].name, table[i].name);
  for (const BrokerKeyInfo& k : table) {
    BrokerConfig c;
    EXPECT_TRUE(c.Set(k.name, k.default_value).ok()) << k.name << "=" << k.default_value;
    EXPECT_NE(k.type, ConfigType::kUnknown) << k.name;
    EXPECT_FALSE(k.doc.empty()) << k.name;
    EXPECT_EQ(BrokerConfigValue(BrokerConfig(), k.name), k.default_value) << k.name;
  }
  for (const TopicConfigKeyInfo& t : TopicConfigKeyTable()) {
    if (t.broker_name.empty()) continue;
    const BrokerKeyInfo* k = FindBrokerKey(t.broker_name);
    ASSERT_NE(k, nullptr) << t.broker_name;
  }
  EXPECT_EQ(FindBrokerKey("log.retention.ms")->mode, UpdateMode::kClusterWide);
  EXPECT_EQ(FindBrokerKey("log.retention.ms")->topic_key, "retention.ms");
  EXPECT_EQ(FindBrokerKey("log.retention.ms")->default_value, "604800000");
  EXPECT_EQ(FindBrokerKey("message.max.bytes")->mode, UpdateMode::kClusterWide);
  EXPECT_EQ(FindBrokerKey("log.message.format.version")->mode, UpdateMode::kReadOnly);
  EXPECT_EQ(FindBrokerKey("num.partitions")->mode, UpdateMode::kReadOnly);
  EXPECT_EQ(FindBrokerKey("no.such.key"), nullptr);
}

TEST(BrokerConfigTableTest, TopicDefaultsOfEveryKindAreSet) {
  BrokerConfig c;
  ASSERT_TRUE(c.SetAll({{"log.preallocate", "true"},
                        {"compression.type", "zstd"},
                        {"log.cleanup.policy", "compact"}})
                  .ok());
  TopicDefaults d = c.topic_defaults();
  EXPECT_EQ(d.settings.passive.at("preallocate"), "true");
  EXPECT_TRUE(d.settings.cleanup_compact);
  EXPECT_EQ(d.static_keys.count("preallocate"), 1u);
  EXPECT_EQ(d.static_keys.count("compression.type"), 1u);
  EXPECT_EQ(BrokerConfigValue(c, "log.preallocate"), "true");
  Status bad = c.Set("log.preallocate", "maybe");
  EXPECT_EQ(bad.message(), "log.preallocate: must be true or false");
}

TEST(DynamicBrokerConfigTest, ChecksFollowTheUpdateMode) {
  EXPECT_TRUE(CheckDynamicBrokerConfig("log.retention.ms", "1000", true).ok());
  EXPECT_TRUE(CheckDynamicBrokerConfig("log.segment.bytes", "1048576", false).ok());
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"num.partitions", "3"},              // read-only
           {"log.message.format.version", "3.0"},  // read-only
           {"no.such.key", "1"},                 // unknown
           {"log.retention.ms", "-5"}}) {        // bad value
    Status s = CheckDynamicBrokerConfig(key, value, true);
    EXPECT_EQ(ToKafkaError(s), KafkaError::kInvalidRequest) << key;
    EXPECT_NE(s.message().find(key), std::string::npos) << s.message();
  }
}

TEST(DynamicBrokerConfigTest, PersistsAtomicallyAndNotifies) {
  char tmpl[] = "/tmp/hr-dyncfg-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  {
    auto d = DynamicBrokerConfig::Open(dir, nullptr);
    ASSERT_TRUE(d.ok());
    int notified = 0;
    (*d)->Subscribe([&](const DynamicBrokerLayers& l) {
      ++notified;
      EXPECT_EQ(l.cluster_default.at("log.retention.ms"), "1000");
    });
    EXPECT_TRUE((*d)->Replace(true, {{"log.retention.ms", "1000"}}, /*validate_only=*/true).ok());
    EXPECT_EQ(notified, 0);
    EXPECT_TRUE((*d)->layers().cluster_default.empty());
    ASSERT_TRUE((*d)->Replace(true, {{"log.retention.ms", "1000"}}, false).ok());
    EXPECT_EQ(notified, 1);
    EXPECT_EQ(ToKafkaError((*d)->Replace(false, {{"num.io.threads", "4"}}, false)),
              KafkaError::kInvalidRequest);
  }
  auto reopened = DynamicBrokerConfig::Open(dir, nullptr);
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ((*reopened)->layers().cluster_default.at("log.retention.ms"), "1000");
  auto [def, broker] = TopicDefaultLayers((*reopened)->layers());
  EXPECT_EQ(def.at("retention.ms"), "1000");
  EXPECT_TRUE(broker.empty());
  std::filesystem::remove_all(dir);
}

// A family's effective config: start properties < dynamic default <
// this broker's dynamic value.
TEST(DynamicBrokerConfigTest, FamilyConfigTakesTheDynamicLayers) {
  struct Fam {
    int32_t a = 1;
    int32_t b = 2;
    int32_t c = 3;
  };
  static const std::vector<ConfigKey<Fam>> keys = {
      IntConfigKey("fam.a", "a", &Fam::a, 0, 100), IntConfigKey("fam.b", "b", &Fam::b, 0, 100),
      IntConfigKey("fam.c", "c", &Fam::c, 0, 100)};
  DynamicBrokerLayers layers{{{"fam.b", "20"}, {"fam.c", "30"}}, {{"fam.c", "300"}}};
  Fam f = EffectiveFamilyConfig(keys, {{"fam.a", "10"}, {"fam.b", "11"}}, layers);
  EXPECT_EQ(f.a, 10);
  EXPECT_EQ(f.b, 20);
  EXPECT_EQ(f.c, 30);  // 300 is out of range: skipped
  layers.per_broker["fam.c"] = "31";
  EXPECT_EQ(EffectiveFamilyConfig(keys, {}, layers).c, 31);
}

TEST(ParseLogDirs, SplitsTrimsAndRefusesEmptyOrRepeatedEntries) {
  auto dirs = ParseLogDirs("/a, /b ,/c");
  ASSERT_TRUE(dirs.ok());
  EXPECT_EQ(dirs.value(), (std::vector<std::string>{"/a", "/b", "/c"}));
  EXPECT_FALSE(ParseLogDirs("/a,,/b").ok());
  EXPECT_FALSE(ParseLogDirs("/a,").ok());
  auto twice = ParseLogDirs("/a,/a/");
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("listed twice"), std::string::npos);
}

}  // namespace
}  // namespace headrace::broker
