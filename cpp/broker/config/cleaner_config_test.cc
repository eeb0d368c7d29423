// The log.cleaner.* family table: defaults, ranges, Extract.
#include "broker/config/cleaner_config.h"

#include <gtest/gtest.h>

namespace headrace::broker {
namespace {

TEST(CleanerConfigTest, KafkaDefaultsAndRanges) {
  CleanerConfig c;
  EXPECT_TRUE(c.enable);
  EXPECT_EQ(c.threads, 1);
  EXPECT_EQ(c.dedupe_buffer_size, 134217728);
  EXPECT_EQ(c.backoff_ms, 15000);
  EXPECT_EQ(c.min_cleanable_ratio, 0.5);
  EXPECT_EQ(c.delete_retention_ms, 86400000);
  EXPECT_EQ(c.max_compaction_lag_ms, INT64_MAX);
  EXPECT_TRUE(c.Set("log.cleaner.threads", "4").ok());
  EXPECT_EQ(c.threads, 4);
  EXPECT_FALSE(c.Set("log.cleaner.threads", "-1").ok());
  // The topic keys' broker defaults are rows of the broker table, not this family.
  EXPECT_EQ(c.Set("log.cleaner.min.cleanable.ratio", "0.9").code(), StatusCode::kNotFound);
  EXPECT_TRUE(c.Set("log.cleaner.io.max.bytes.per.second", "1048576.5").ok());
  EXPECT_EQ(c.io_max_bytes_per_second, 1048576.5);
  EXPECT_FALSE(c.Set("log.cleaner.enable", "yes").ok());
  EXPECT_EQ(c.Set("log.cleaner.bogus", "1").code(), StatusCode::kNotFound);
}

TEST(CleanerConfigTest, ExtractTakesOnlyItsKeys) {
  std::map<std::string, std::string> props = {{"log.cleaner.backoff.ms", "100"},
                                              {"log.cleaner.enable", "false"},
                                              {"log.retention.ms", "1000"}};
  CleanerConfig c;
  ASSERT_TRUE(c.Extract(props).ok());
  EXPECT_EQ(c.backoff_ms, 100);
  EXPECT_FALSE(c.enable);
  EXPECT_EQ(props.size(), 1u);
  EXPECT_EQ(props.count("log.retention.ms"), 1u);
  // Describe lists every key once, with its current value.
  int found = 0;
  for (const SettingDoc& d : c.Describe()) {
    if (d.name == "log.cleaner.backoff.ms") {
      EXPECT_EQ(d.value, "100");
      ++found;
    }
  }
  EXPECT_EQ(found, 1);
}

}  // namespace
}  // namespace headrace::broker
