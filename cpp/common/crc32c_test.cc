#include "common/crc32c.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace headrace::crc32c {
namespace {

TEST(Crc32c, KnownVectors) {
  // RFC 3720 B.4 test vectors and the standard "123456789" check value.
  EXPECT_EQ(Value("123456789", 9), 0xE3069283u);
  std::vector<uint8_t> zeros(32, 0), ones(32, 0xff), inc(32);
  for (int i = 0; i < 32; ++i) inc[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(Value(zeros.data(), 32), 0x8A9136AAu);
  EXPECT_EQ(Value(ones.data(), 32), 0x62A8AB43u);
  EXPECT_EQ(Value(inc.data(), 32), 0x46DD794Eu);
}

TEST(Crc32c, HardwareAndPortableAgreeOnEveryLengthAndAlignment) {
  std::string s;
  for (int i = 0; i < 1000; ++i) s.push_back(static_cast<char>(i * 131 + 7));
  for (size_t off = 0; off < 9; ++off)
    for (size_t n = 0; n + off <= s.size(); n += 37)
      ASSERT_EQ(Extend(0, s.data() + off, n), ExtendPortable(0, s.data() + off, n));
}

TEST(Crc32c, ExtendIsIncremental) {
  std::string a = "hello, ", b = "world";
  EXPECT_EQ(Extend(Value(a.data(), a.size()), b.data(), b.size()),
            Value((a + b).data(), a.size() + b.size()));
}

}  // namespace
}  // namespace headrace::crc32c
