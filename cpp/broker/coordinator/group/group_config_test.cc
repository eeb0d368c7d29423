// GroupConfig: the one list of group keys drives Set and Describe.
#include "broker/coordinator/group/group_config.h"

#include <gtest/gtest.h>

namespace headrace::broker::group {
namespace {

TEST(GroupConfigTest, EveryDescribedKeyIsSettableAndReadsBackAsSet) {
  const GroupConfig defaults;
  for (const GroupConfig::Setting& s : defaults.Describe()) {
    GroupConfig c;
    EXPECT_TRUE(c.Set(s.name, s.value).ok()) << s.name << "=" << s.value;
    EXPECT_FALSE(s.doc.empty()) << s.name;
  }
  GroupConfig c;
  ASSERT_TRUE(c.Set("offsets.retention.minutes", "90").ok());
  ASSERT_TRUE(c.Set("headrace.offsets.commit.fsync", "false").ok());
  ASSERT_TRUE(c.Set("offsets.topic.segment.bytes", "65536").ok());
  EXPECT_EQ(c.offsets_retention_ms, 90 * 60000);
  EXPECT_FALSE(c.commit_fsync);
  EXPECT_EQ(c.log_segment_bytes, 65536);
  for (const GroupConfig::Setting& s : c.Describe()) {
    if (s.name == "offsets.retention.minutes") { EXPECT_EQ(s.value, "90"); }
    if (s.name == "headrace.offsets.commit.fsync") { EXPECT_EQ(s.value, "false"); }
    if (s.name == "offsets.topic.segment.bytes") { EXPECT_EQ(s.value, "65536"); }
  }
}

TEST(GroupConfigTest, BadValuesNameTheKeyAndUnknownKeysAreNotFound) {
  GroupConfig c;
  EXPECT_EQ(c.Set("group.max.size", "0").message(),
            "group.max.size: must be an integer in [1, 2147483647], got '0'");
  EXPECT_EQ(c.Set("offsets.topic.segment.bytes", "100").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c.Set("headrace.offsets.commit.fsync", "yes").message(),
            "headrace.offsets.commit.fsync: must be true or false, got 'yes'");
  EXPECT_EQ(c.Set("log.retention.ms", "1").code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace headrace::broker::group
