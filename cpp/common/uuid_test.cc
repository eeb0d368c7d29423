#include "common/uuid.h"

#include <gtest/gtest.h>

#include <set>

namespace headrace {
namespace {

TEST(UuidTest, RandomIsVersion4NonZeroAndUnique) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    Uuid u = Uuid::Random();
    EXPECT_FALSE(u.is_zero());
    EXPECT_EQ(u.bytes[6] >> 4, 4);
    EXPECT_NE(u.ToBase64()[0], '-');
    seen.insert(u.ToHex());
  }
  EXPECT_EQ(seen.size(), 1000u);
}

TEST(UuidTest, Base64RoundTripsAndIs22Chars) {
  for (int i = 0; i < 100; ++i) {
    Uuid u = Uuid::Random();
    std::string text = u.ToBase64();
    ASSERT_EQ(text.size(), 22u);
    auto back = Uuid::FromBase64(text);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back.value(), u);
  }
}

TEST(UuidTest, KnownEncoding) {
  // 16 zero bytes except the last = 1: 21 'A's then the 2 low bits... => "AAAAAAAAAAAAAAAAAAAAAQ"
  Uuid u;
  u.bytes[15] = 1;
  EXPECT_EQ(u.ToBase64(), "AAAAAAAAAAAAAAAAAAAAAQ");
  EXPECT_EQ(u.ToHex(), "00000000000000000000000000000001");
  EXPECT_EQ(Uuid::Zero().ToBase64(), "AAAAAAAAAAAAAAAAAAAAAA");
  EXPECT_EQ(u.least_significant(), 1u);
  EXPECT_EQ(Uuid::FromHalves(u.most_significant(), u.least_significant()), u);
}

TEST(UuidTest, FromBase64RejectsBadText) {
  EXPECT_FALSE(Uuid::FromBase64("short").ok());
  EXPECT_FALSE(Uuid::FromBase64("AAAAAAAAAAAAAAAAAAAA*A").ok());
  EXPECT_FALSE(Uuid::FromBase64("AAAAAAAAAAAAAAAAAAAAAB").ok());  // non-zero pad bits
}

}  // namespace
}  // namespace headrace
