// Group configs (GROUP config resource): Kafka's checks against the
// broker's bounds, the effective settings, the durations of
// share.auto.offset.reset, and the store's file.
#include "broker/coordinator/group/group_resource_config.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "broker/base/kafka_error.h"
#include "broker/coordinator/group/group_config_store.h"

namespace headrace::broker::group {
namespace {

KafkaError ErrorOf(const ConfigMap& m, const GroupConfig& broker = {}) {
  return ToKafkaError(CheckGroupResourceConfigs(m, broker));
}

TEST(GroupResourceConfigTest, AcceptsKafkasKeysWithinTheBrokersBounds) {
  EXPECT_EQ(ErrorOf({{"share.auto.offset.reset", "earliest"},
                     {"share.record.lock.duration.ms", "15000"},
                     {"share.delivery.count.limit", "3"},
                     {"share.session.timeout.ms", "50000"},
                     {"share.heartbeat.interval.ms", "6000"},
                     {"consumer.session.timeout.ms", "60000"},
                     {"consumer.heartbeat.interval.ms", "15000"},
                     {"share.isolation.level", "read_uncommitted"},
                     {"share.partition.max.record.locks", "500"}}),
            KafkaError::kNone);
  EXPECT_EQ(ErrorOf({{"share.auto.offset.reset", "by_duration:PT1H30M"}}), KafkaError::kNone);
}

TEST(GroupResourceConfigTest, RefusesUnknownKeysBadValuesAndOutOfRangeAsInvalidConfig) {
  EXPECT_EQ(ErrorOf({{"share.no.such.key", "1"}}), KafkaError::kInvalidConfig);
  EXPECT_EQ(ErrorOf({{"share.auto.offset.reset", "newest"}}), KafkaError::kInvalidConfig);
  EXPECT_EQ(ErrorOf({{"share.auto.offset.reset", "by_duration:1h"}}), KafkaError::kInvalidConfig);
  EXPECT_EQ(ErrorOf({{"share.auto.offset.reset", "by_duration:-PT1H"}}),
            KafkaError::kInvalidConfig);
  EXPECT_EQ(ErrorOf({{"share.record.lock.duration.ms", "abc"}}), KafkaError::kInvalidConfig);
  EXPECT_EQ(ErrorOf({{"share.record.lock.duration.ms", "500"}}), KafkaError::kInvalidConfig);
  EXPECT_EQ(ErrorOf({{"share.record.lock.duration.ms", "60001"}}), KafkaError::kInvalidConfig);
  EXPECT_EQ(ErrorOf({{"share.delivery.count.limit", "11"}}), KafkaError::kInvalidConfig);
  EXPECT_EQ(ErrorOf({{"consumer.session.timeout.ms", "44999"}}), KafkaError::kInvalidConfig);
  EXPECT_EQ(ErrorOf({{"share.isolation.level", "read_committed"}}), KafkaError::kNone);
  EXPECT_EQ(ErrorOf({{"share.isolation.level", "committed"}}), KafkaError::kInvalidConfig);
  // The session timeout must exceed the heartbeat interval.
  EXPECT_EQ(ErrorOf({{"share.session.timeout.ms", "45000"}, {"share.heartbeat.interval.ms", "15000"}}),
            KafkaError::kNone);
  GroupConfig wide;
  wide.share_max_heartbeat_interval_ms = 60000;
  EXPECT_EQ(ErrorOf({{"share.heartbeat.interval.ms", "45000"}}, wide), KafkaError::kInvalidConfig);
  // The bounds are the broker's.
  GroupConfig tight;
  tight.share_max_record_lock_duration_ms = 20000;
  EXPECT_EQ(ErrorOf({{"share.record.lock.duration.ms", "30000"}}, tight),
            KafkaError::kInvalidConfig);
  const Status st = CheckGroupResourceConfigs({{"share.record.lock.duration.ms", "30000"}}, tight);
  EXPECT_NE(st.message().find("group.share.max.record.lock.duration.ms"), std::string::npos)
      << st.message();
}

TEST(GroupResourceConfigTest, ParsesIsoDurationsAsJava) {
  EXPECT_EQ(ParseIsoDurationMs("PT1H").value(), 3600000);
  EXPECT_EQ(ParseIsoDurationMs("P1DT2H").value(), 93600000);
  EXPECT_EQ(ParseIsoDurationMs("PT0.5S").value(), 500);
  EXPECT_EQ(ParseIsoDurationMs("pt10m").value(), 600000);
  EXPECT_FALSE(ParseIsoDurationMs("P").ok());
  EXPECT_FALSE(ParseIsoDurationMs("PT").ok());
  EXPECT_FALSE(ParseIsoDurationMs("P1H").ok());   // hours need T
  EXPECT_FALSE(ParseIsoDurationMs("PT1.5H").ok());  // fractions only on seconds
  EXPECT_FALSE(ParseIsoDurationMs("-PT1S").ok());
}

TEST(GroupResourceConfigTest, EffectiveSettingsTakeOverridesElseTheBrokers) {
  GroupConfig broker;
  broker.share_record_lock_duration_ms = 20000;
  EffectiveGroupSettings e = EffectiveSettingsOf({{"share.delivery.count.limit", "7"},
                                                  {"share.auto.offset.reset", "earliest"}},
                                                 broker);
  EXPECT_EQ(e.share_delivery_count_limit, 7);
  EXPECT_EQ(e.share_record_lock_duration_ms, 20000);
  EXPECT_EQ(e.share_auto_offset_reset.kind, ShareAutoOffsetReset::Kind::kEarliest);
  EXPECT_FALSE(e.share_read_committed);
  EXPECT_TRUE(EffectiveSettingsOf({{"share.isolation.level", "read_committed"}}, broker)
                  .share_read_committed);
  // A stored value outside bounds lowered later is used clamped to them.
  broker.share_max_record_lock_duration_ms = 20000;
  EXPECT_EQ(EffectiveSettingsOf({{"share.record.lock.duration.ms", "50000"}}, broker)
                .share_record_lock_duration_ms,
            20000);
  std::vector<ConfigEntry> rows =
      DescribeGroupResourceConfigs({{"share.delivery.count.limit", "7"}}, broker, {});
  ASSERT_EQ(rows.size(), GroupResourceConfigKeys().size());
  for (const ConfigEntry& r : rows) {
    if (r.name == "share.delivery.count.limit") {
      EXPECT_EQ(*r.value, "7");
      EXPECT_EQ(static_cast<int>(r.source), kDynamicGroupConfigSource);
    } else {
      EXPECT_EQ(r.source, ConfigSource::kDefaultConfig) << r.name;
    }
    if (r.name == "share.record.lock.duration.ms") EXPECT_EQ(*r.value, "20000");
  }
}

TEST(GroupConfigStoreTest, KeepsEveryGroupsConfigsAcrossReopen) {
  const std::string dir = ::testing::TempDir() + "group_config_store_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  {
    auto store = GroupConfigStore::Open(dir, nullptr);
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)->Replace("g1", {{"share.auto.offset.reset", "earliest"}}).ok());
    ASSERT_TRUE((*store)->Replace("g2", {{"share.delivery.count.limit", "3"}}).ok());
    ASSERT_TRUE((*store)->Replace("g2", {}).ok());  // removed
  }
  auto store = GroupConfigStore::Open(dir, nullptr);
  ASSERT_TRUE(store.ok());
  EXPECT_EQ((*store)->Get("g1").at("share.auto.offset.reset"), "earliest");
  EXPECT_TRUE((*store)->Get("g2").empty());
  ApplyClusterGroupConfigs(R"({"group_configs": {"g3": {"share.delivery.count.limit": "4"}}})",
                           store->get());
  EXPECT_TRUE((*store)->Get("g1").empty());
  EXPECT_EQ((*store)->Get("g3").at("share.delivery.count.limit"), "4");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace headrace::broker::group
