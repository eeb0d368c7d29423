#include "broker/config/topic_config.h"

#include <gtest/gtest.h>

#include "broker/base/kafka_error.h"

namespace headrace::broker {
namespace {

const ConfigEntry& Entry(const std::vector<ConfigEntry>& all, const std::string& name) {
  for (const auto& e : all) {
    if (e.name == name) return e;
  }
  static ConfigEntry none;
  ADD_FAILURE() << "no entry " << name;
  return none;
}

TEST(TopicConfigTest, ValidationMessagesNameTheKeyAndRule) {
  struct Case { const char* key; const char* value; const char* message; };
  const Case cases[] = {
      {"retention.ms", "-2", "retention.ms: must be an integer >= -1"},
      {"retention.ms", "abc", "retention.ms: must be an integer >= -1"},
      {"retention.bytes", "1.5", "retention.bytes: must be an integer >= -1"},
      {"segment.bytes", "13", "segment.bytes: must be an integer between 14 and 2147483647"},
      {"segment.bytes", "3000000000", "segment.bytes: must be an integer between 14 and 2147483647"},
      {"segment.ms", "0", "segment.ms: must be an integer >= 1"},
      {"flush.messages", "0", "flush.messages: must be an integer >= 1"},
      {"flush.ms", "-1", "flush.ms: must be an integer >= 0"},
      {"min.insync.replicas", "0", "min.insync.replicas: must be an integer between 1 and 2147483647"},
      {"message.timestamp.type", "Now", "message.timestamp.type: must be CreateTime or LogAppendTime"},
      {"cleanup.policy", "delete,shred",
       "cleanup.policy: must be a non-empty list of \"delete\" and/or \"compact\""},
      {"cleanup.policy", "", "cleanup.policy: must be a non-empty list of \"delete\" and/or \"compact\""},
      {"no.such.key", "1", "Unknown topic config name: no.such.key"},
  };
  for (const Case& c : cases) {
    Status s = ValidateTopicConfig(c.key, c.value);
    ASSERT_FALSE(s.ok()) << c.key << "=" << c.value;
    EXPECT_EQ(ToKafkaError(s), KafkaError::kInvalidConfig);
    EXPECT_EQ(s.message(), c.message);
  }
}

TEST(TopicConfigTest, AcceptsValidValues) {
  EXPECT_TRUE(ValidateTopicConfig("retention.ms", "-1").ok());
  EXPECT_TRUE(ValidateTopicConfig("retention.ms", " 86400000 ").ok());
  EXPECT_TRUE(ValidateTopicConfig("cleanup.policy", "compact, delete").ok());
  EXPECT_TRUE(ValidateTopicConfig("flush.messages", "9223372036854775807").ok());
  EXPECT_TRUE(ValidateTopicConfig("message.timestamp.type", "LogAppendTime").ok());
  EXPECT_EQ(NormalizeTopicConfigValue("retention.ms", " +5 "), "5");
  EXPECT_EQ(NormalizeTopicConfigValue("cleanup.policy", "delete, compact,delete"), "delete,compact");
}

TEST(TopicConfigTest, CompressionTypeAndTimestampBoundsReachTheLogConfig) {
  EXPECT_EQ(ValidateTopicConfig("compression.type", "brotli").message(),
            "compression.type: must be one of uncompressed, zstd, lz4, snappy, gzip, producer");
  EXPECT_EQ(ValidateTopicConfig("message.timestamp.before.max.ms", "-1").message(),
            "message.timestamp.before.max.ms: must be an integer >= 0");
  TopicDefaults d;
  auto s = ApplyTopicConfigs(d, {{"compression.type", "zstd"},
                                 {"message.timestamp.after.max.ms", "3600000"},
                                 {"message.timestamp.difference.max.ms", "5000"}});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->log.compression_target, std::optional<Compression>(Compression::kZstd));
  EXPECT_EQ(s->log.timestamp_after_max_ms, 3600000);
  EXPECT_EQ(s->log.timestamp_before_max_ms, INT64_MAX);
  EXPECT_EQ(s->log.timestamp_difference_max_ms, 5000);
  EXPECT_FALSE(d.settings.log.compression_target.has_value());  // producer by default
  auto u = ApplyTopicConfigs(d, {{"compression.type", "uncompressed"}});
  EXPECT_EQ(u->log.compression_target, std::optional<Compression>(Compression::kNone));
  auto all = DescribeTopicConfigs(d, {{"compression.type", "lz4"}});
  EXPECT_EQ(Entry(all, "compression.type").value, "lz4");
  EXPECT_EQ(Entry(all, "message.timestamp.before.max.ms").value, "9223372036854775807");
  EXPECT_EQ(Entry(DescribeTopicConfigs(d, {}), "compression.type").value, "producer");
}

TEST(TopicConfigTest, OverridesApplyOntoBrokerDefaults) {
  TopicDefaults d;
  d.settings.log.retention_ms = 1000;
  d.settings.log.segment_bytes = 4096;
  auto s = ApplyTopicConfigs(d, {{"retention.ms", "5"},
                                 {"flush.messages", "9223372036854775807"},
                                 {"flush.ms", "0"},
                                 {"message.timestamp.type", "LogAppendTime"},
                                 {"cleanup.policy", "compact"},
                                 {"segment.index.bytes", "1024"},
                                 {"min.insync.replicas", "2"}});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->log.retention_ms, 5);
  EXPECT_EQ(s->log.segment_bytes, 4096);  // inherited
  EXPECT_EQ(s->log.flush_interval_messages, -1);
  EXPECT_EQ(s->log.flush_interval_ms, 0);
  EXPECT_EQ(s->log.timestamp_type, TimestampType::kLogAppendTime);
  EXPECT_EQ(s->log.max_index_bytes, 1024);
  EXPECT_TRUE(s->cleanup_compact);
  EXPECT_FALSE(s->cleanup_delete);
  EXPECT_EQ(s->min_insync_replicas, 2);
}

TEST(TopicConfigTest, DescribeReportsValueSourceAndType) {
  TopicDefaults d;
  d.settings.log.retention_ms = 1000;
  d.static_keys = {"retention.ms"};
  auto all = DescribeTopicConfigs(d, {{"segment.bytes", "2048"}});
  EXPECT_EQ(all.size(), SupportedTopicConfigKeys().size());
  EXPECT_GE(all.size(), 31u);  // Kafka 3.9's topic keys

  const ConfigEntry& seg = Entry(all, "segment.bytes");
  EXPECT_EQ(seg.value, "2048");
  EXPECT_EQ(seg.source, ConfigSource::kDynamicTopicConfig);
  EXPECT_EQ(seg.type, ConfigType::kInt);
  EXPECT_FALSE(seg.is_default);
  ASSERT_EQ(seg.synonyms.size(), 2u);
  EXPECT_EQ(seg.synonyms[0].name, "segment.bytes");
  EXPECT_EQ(seg.synonyms[1].name, "log.segment.bytes");
  EXPECT_EQ(seg.synonyms[1].value, "1073741824");

  const ConfigEntry& ret = Entry(all, "retention.ms");
  EXPECT_EQ(ret.value, "1000");
  EXPECT_EQ(ret.source, ConfigSource::kStaticBrokerConfig);
  EXPECT_EQ(ret.type, ConfigType::kLong);

  const ConfigEntry& flush = Entry(all, "flush.ms");
  EXPECT_EQ(flush.value, "9223372036854775807");  // LogConfig -1 = never
  EXPECT_EQ(flush.source, ConfigSource::kDefaultConfig);
  EXPECT_TRUE(flush.is_default);
  EXPECT_FALSE(flush.read_only);
  EXPECT_FALSE(flush.sensitive);
  EXPECT_FALSE(flush.documentation.empty());

  EXPECT_EQ(Entry(all, "cleanup.policy").type, ConfigType::kList);
  EXPECT_EQ(Entry(all, "cleanup.policy").value, "delete");
  EXPECT_EQ(Entry(all, "message.timestamp.type").value, "CreateTime");
}

TEST(TopicConfigTest, IncrementalOpsSetDeleteAppendSubtract) {
  TopicDefaults d;
  ConfigMap cur = {{"retention.ms", "10"}};
  auto r = ApplyConfigAlterations(d, cur,
                                  {{"segment.ms", AlterConfigOp::kSet, "100"},
                                   {"retention.ms", AlterConfigOp::kDelete, std::nullopt},
                                   {"cleanup.policy", AlterConfigOp::kAppend, "compact"}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value(), (ConfigMap{{"segment.ms", "100"}, {"cleanup.policy", "delete,compact"}}));

  auto sub = ApplyConfigAlterations(d, r.value(), {{"cleanup.policy", AlterConfigOp::kSubtract, "delete"}});
  ASSERT_TRUE(sub.ok());
  EXPECT_EQ(sub->at("cleanup.policy"), "compact");

  auto empty = ApplyConfigAlterations(d, sub.value(), {{"cleanup.policy", AlterConfigOp::kSubtract, "compact"}});
  EXPECT_EQ(ToKafkaError(empty.status()), KafkaError::kInvalidConfig);

  auto not_list = ApplyConfigAlterations(d, cur, {{"retention.ms", AlterConfigOp::kAppend, "5"}});
  EXPECT_EQ(ToKafkaError(not_list.status()), KafkaError::kInvalidRequest);

  auto unknown = ApplyConfigAlterations(d, cur, {{"bogus", AlterConfigOp::kDelete, std::nullopt}});
  EXPECT_EQ(ToKafkaError(unknown.status()), KafkaError::kInvalidConfig);

  auto bad = ApplyConfigAlterations(d, cur, {{"retention.ms", AlterConfigOp::kSet, "-7"}});
  EXPECT_EQ(bad.status().message(), "retention.ms: must be an integer >= -1");
}

// Kafka 3.9's keys beyond the effective ones are accepted, normalised,
// stored and described; invalid values fail with INVALID_CONFIG.
TEST(TopicConfigTest, EveryKafkaTopicKeyIsAccepted) {
  const ConfigMap kafka_keys = {
      {"compression.type", "zstd"},
      {"message.format.version", "3.0"},
      {"compression.gzip.level", "5"},
      {"compression.lz4.level", "10"},
      {"compression.zstd.level", "-5"},
      {"file.delete.delay.ms", "1000"},
      {"follower.replication.throttled.replicas", "0:1, 1:2"},
      {"leader.replication.throttled.replicas", "*"},
      {"local.retention.bytes", "-2"},
      {"local.retention.ms", "1000"},
      {"message.downconversion.enable", "FALSE"},
      {"preallocate", "true"},
      {"remote.storage.enable", "false"},
      {"remote.log.copy.disable", "false"},
      {"remote.log.delete.on.disable", "false"},
      {"segment.jitter.ms", "10"},
      {"unclean.leader.election.enable", "true"},
  };
  ASSERT_TRUE(ValidateTopicConfigs(kafka_keys).ok()) << ValidateTopicConfigs(kafka_keys).ToString();
  ConfigMap stored;
  for (const auto& [k, v] : kafka_keys) stored[k] = NormalizeTopicConfigValue(k, v);
  EXPECT_EQ(stored["message.downconversion.enable"], "false");
  EXPECT_EQ(stored["follower.replication.throttled.replicas"], "0:1,1:2");
  auto described = DescribeTopicConfigs(TopicDefaults{}, stored);
  for (const ConfigEntry& e : described) {
    if (!kafka_keys.count(e.name)) continue;
    EXPECT_EQ(e.value, stored[e.name]) << e.name;
    EXPECT_EQ(e.source, ConfigSource::kDynamicTopicConfig) << e.name;
  }
  // message.format.version: as Kafka, segments past the significant ones
  // (three for 0.x, two otherwise) are not read.
  for (const char* v : {"0.10.0.0", "0.10.0", "3.0.1", "2.8.9-IV0", "0.11.0-IV2", "3.9"}) {
    EXPECT_TRUE(ValidateTopicConfig("message.format.version", v).ok()) << v;
  }
  for (const char* v : {"0.12.0.0", "3.10.0", "3.0-IV", "3"}) {
    EXPECT_EQ(ToKafkaError(ValidateTopicConfig("message.format.version", v)),
              KafkaError::kInvalidConfig) << v;
  }
  // Defaults are Kafka's.
  auto defaults = DescribeTopicConfigs(TopicDefaults{}, {});
  EXPECT_EQ(Entry(defaults, "message.format.version").value, "3.0-IV1");
  EXPECT_EQ(Entry(defaults, "compression.zstd.level").value, "3");
  EXPECT_EQ(Entry(defaults, "local.retention.ms").value, "-2");
  EXPECT_EQ(Entry(defaults, "preallocate").type, ConfigType::kBoolean);
  EXPECT_EQ(Entry(defaults, "leader.replication.throttled.replicas").type, ConfigType::kList);
  EXPECT_EQ(Entry(defaults, "leader.replication.throttled.replicas").value, "");

  for (const auto& [k, v] : ConfigMap{{"compression.gzip.level", "0"},
                                      {"compression.lz4.level", "18"},
                                      {"message.format.version", "4.7"},
                                      {"message.format.version", "banana"},
                                      {"preallocate", "yes"},
                                      {"remote.storage.enable", "true"},
                                      {"local.retention.ms", "-3"},
                                      {"leader.replication.throttled.replicas", "0-1"}}) {
    EXPECT_EQ(ToKafkaError(ValidateTopicConfig(k, v)), KafkaError::kInvalidConfig) << k << "=" << v;
  }
  EXPECT_EQ(ToKafkaError(ValidateTopicConfig("no.such.key", "1")), KafkaError::kInvalidConfig);
}

TEST(TopicConfigTest, TableDefaultsValidateAndNameTheirBrokerKey) {
  for (const TopicConfigKeyInfo& k : TopicConfigKeyTable()) {
    EXPECT_TRUE(ValidateTopicConfig(k.name, k.default_value).ok()) << k.name;
    EXPECT_FALSE(k.doc.empty()) << k.name;
  }
}

// Sources, most specific first: topic, dynamic per-broker, dynamic
// default, static, built-in.
TEST(TopicConfigTest, DynamicBrokerLayersDecideSourceAndSynonyms) {
  TopicDefaults base;
  base.settings.log.retention_ms = 1000;
  base.static_keys = {"retention.ms"};
  TopicDefaults d = WithDynamicLayers(base, {{"retention.ms", "2000"}, {"segment.bytes", "4096"}},
                                      {{"retention.ms", "3000"}});
  EXPECT_EQ(d.settings.log.retention_ms, 3000);
  EXPECT_EQ(d.settings.log.segment_bytes, 4096);
  auto all = DescribeTopicConfigs(d, {});
  const ConfigEntry& ret = Entry(all, "retention.ms");
  EXPECT_EQ(ret.value, "3000");
  EXPECT_EQ(ret.source, ConfigSource::kDynamicBrokerConfig);
  ASSERT_EQ(ret.synonyms.size(), 4u);
  EXPECT_EQ(ret.synonyms[1].source, ConfigSource::kDynamicDefaultBrokerConfig);
  EXPECT_EQ(ret.synonyms[1].value, "2000");
  EXPECT_EQ(ret.synonyms[2].source, ConfigSource::kStaticBrokerConfig);
  EXPECT_EQ(ret.synonyms[2].value, "1000");
  EXPECT_EQ(ret.synonyms[3].value, "604800000");
  EXPECT_EQ(Entry(all, "segment.bytes").source, ConfigSource::kDynamicDefaultBrokerConfig);
  // A topic override still wins.
  auto over = DescribeTopicConfigs(d, {{"retention.ms", "5"}});
  EXPECT_EQ(Entry(over, "retention.ms").value, "5");
  EXPECT_EQ(Entry(over, "retention.ms").synonyms.size(), 5u);
}

TEST(TopicConfigTest, CompactionKeysHaveKafkasTypesRangesAndDefaults) {
  TopicDefaults d;
  auto all = DescribeTopicConfigs(d, {});
  EXPECT_EQ(Entry(all, "min.cleanable.dirty.ratio").value, "0.5");
  EXPECT_EQ(Entry(all, "min.cleanable.dirty.ratio").type, ConfigType::kDouble);
  EXPECT_EQ(Entry(all, "min.cleanable.dirty.ratio").synonyms.back().name,
            "log.cleaner.min.cleanable.ratio");
  EXPECT_EQ(Entry(all, "delete.retention.ms").value, "86400000");
  EXPECT_EQ(Entry(all, "min.compaction.lag.ms").value, "0");
  EXPECT_EQ(Entry(all, "max.compaction.lag.ms").value, "9223372036854775807");
  EXPECT_TRUE(ValidateTopicConfig("min.cleanable.dirty.ratio", "0.01").ok());
  EXPECT_TRUE(ValidateTopicConfig("min.cleanable.dirty.ratio", "1").ok());
  EXPECT_FALSE(ValidateTopicConfig("min.cleanable.dirty.ratio", "1.5").ok());
  EXPECT_FALSE(ValidateTopicConfig("min.cleanable.dirty.ratio", "x").ok());
  EXPECT_FALSE(ValidateTopicConfig("delete.retention.ms", "-1").ok());
  EXPECT_FALSE(ValidateTopicConfig("max.compaction.lag.ms", "0").ok());
  EXPECT_TRUE(ValidateTopicConfig("min.compaction.lag.ms", "0").ok());
  auto s = ApplyTopicConfigs(d, {{"delete.retention.ms", "100"},
                                 {"min.cleanable.dirty.ratio", "0.25"}});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->delete_retention_ms, 100);
  EXPECT_EQ(s->min_cleanable_dirty_ratio, 0.25);
  EXPECT_FALSE(s->min_compaction_lag_ms.has_value());  // the broker's value applies
}

}  // namespace
}  // namespace headrace::broker
