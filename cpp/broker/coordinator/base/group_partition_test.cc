// Kafka's group -> __consumer_offsets partition rule. The expected values
// were computed independently with a JVM (String.hashCode and
// Utils.abs(h) % n, on JDK 17), not with this code.
#include "broker/coordinator/base/group_partition.h"

#include <gtest/gtest.h>

#include <string>

namespace headrace::broker::group {
namespace {

TEST(GroupPartitionTest, JavaHashCodeOfAsciiAndNonAscii) {
  EXPECT_EQ(JavaStringHashCode(""), 0);
  EXPECT_EQ(JavaStringHashCode("a"), 97);
  EXPECT_EQ(JavaStringHashCode("my-group"), -1906497762);
  EXPECT_EQ(JavaStringHashCode("console-consumer-12345"), 158455506);
  EXPECT_EQ(JavaStringHashCode("gr\xc3\xbcppe"), -1233264812);  // grüppe
  // 日本語グループ (three-byte UTF-8, one UTF-16 unit each)
  EXPECT_EQ(JavaStringHashCode("\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x82\xb0\xe3\x83\xab"
                               "\xe3\x83\xbc\xe3\x83\x97"),
            -305235731);
  // emoji-😀: U+1F600 counts as its two surrogates, as in Java.
  EXPECT_EQ(JavaStringHashCode("emoji-\xf0\x9f\x98\x80"), 1164511306);
  // Java's decoder turns the malformed byte into U+FFFD.
  EXPECT_EQ(JavaStringHashCode(std::string("a\xff" "b")), 2124838);
}

TEST(GroupPartitionTest, KafkaPartitionForIncludingIntegerMinValue) {
  EXPECT_EQ(GroupPartition("a", 50), 47);
  EXPECT_EQ(GroupPartition("my-group", 50), 12);  // negative hash: abs first
  EXPECT_EQ(GroupPartition("console-consumer-12345", 50), 6);
  EXPECT_EQ(GroupPartition("gr\xc3\xbcppe", 6), 2);
  EXPECT_EQ(GroupPartition("emoji-\xf0\x9f\x98\x80", 6), 4);
  // hashCode == Integer.MIN_VALUE: Utils.abs maps it to 0 (Math.abs would
  // stay negative).
  for (const char* id : {"polygenelubricants", "GydZG_", "DESIGNING WORKHOUSES"}) {
    EXPECT_EQ(JavaStringHashCode(id), INT32_MIN) << id;
    EXPECT_EQ(GroupPartition(id, 50), 0) << id;
    EXPECT_EQ(GroupPartition(id, 7), 0) << id;
  }
  EXPECT_EQ(GroupPartition("anything", 1), 0);
}

}  // namespace
}  // namespace headrace::broker::group
