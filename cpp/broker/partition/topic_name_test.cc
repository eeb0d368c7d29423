#include "broker/partition/topic_name.h"

#include <gtest/gtest.h>

#include "broker/base/kafka_error.h"
#include "broker/partition/partition_dir.h"

namespace headrace::broker {
namespace {

TEST(TopicNameTest, AcceptsKafkaLegalNames) {
  EXPECT_TRUE(ValidateTopicName("orders").ok());
  EXPECT_TRUE(ValidateTopicName("a.b_c-D9").ok());
  EXPECT_TRUE(ValidateTopicName(std::string(249, 'x')).ok());
  EXPECT_TRUE(ValidateTopicName("...").ok());
}

TEST(TopicNameTest, RejectsIllegalNamesWithInvalidTopicException) {
  for (std::string bad : {std::string(""), std::string("."), std::string(".."),
                          std::string(250, 'x'), std::string("a b"), std::string("a/b"),
                          std::string("ü")}) {
    Status s = ValidateTopicName(bad);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_EQ(ToKafkaError(s), KafkaError::kInvalidTopicException) << bad;
  }
  EXPECT_NE(ValidateTopicName("a b").message().find("illegal"), std::string::npos);
}

TEST(TopicNameTest, InternalTopicsAndCollisions) {
  EXPECT_TRUE(IsInternalTopic("__consumer_offsets"));
  EXPECT_TRUE(IsInternalTopic("__transaction_state"));
  EXPECT_FALSE(IsInternalTopic("orders"));
  EXPECT_TRUE(TopicNamesCollide("a.b", "a_b"));
  EXPECT_FALSE(TopicNamesCollide("a.b", "a-b"));
}

TEST(PartitionDirTest, BuildsAndParsesNames) {
  TopicPartition tp{"my.topic-x", 12};
  EXPECT_EQ(PartitionDirPath("/d", tp), "/d/my.topic-x-12");
  auto parsed = ParsePartitionDirName("my.topic-x-12");
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(*parsed, tp);
  EXPECT_FALSE(ParsePartitionDirName("headrace-meta.json").has_value());
  EXPECT_FALSE(ParsePartitionDirName("t-01").has_value());
  EXPECT_FALSE(ParsePartitionDirName("-1").has_value());
  std::string dead = DeletedPartitionDirName(tp, "abcdef");
  EXPECT_EQ(dead, "my.topic-x-12.abcdef-delete");
  EXPECT_TRUE(IsDeletedPartitionDirName(dead));
  EXPECT_FALSE(ParsePartitionDirName(dead).has_value());
  EXPECT_FALSE(IsDeletedPartitionDirName("my.topic-x-12"));
}

}  // namespace
}  // namespace headrace::broker
