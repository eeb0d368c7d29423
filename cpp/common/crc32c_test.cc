#include "common/crc32c.h"

#include <algorithm>
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

// Extend interleaves three streams over blocks of 3 x 256 and 3 x 4096 bytes
// (after aligning to 8): every length around those boundaries, at several
// alignments and start values, must match the byte-at-a-time portable code.
TEST(Crc32c, HardwareAndPortableAgreeAroundInterleavingBlocks) {
  std::vector<uint8_t> buf(3 * 3 * 4096 + 64);
  uint32_t x = 12345;
  for (auto& b : buf) b = static_cast<uint8_t>((x = x * 1103515245u + 12345u) >> 24);
  std::vector<size_t> lengths;
  for (size_t edge : {size_t{3 * 256}, size_t{2 * 3 * 256}, size_t{3 * 4096},
                      size_t{3 * 4096 + 3 * 256}, size_t{2 * 3 * 4096}})
    for (size_t d = 0; d <= 18; ++d) {
      lengths.push_back(edge - 9 + d);
    }
  for (size_t off : {0, 1, 5, 7, 8})
    for (size_t n : lengths)
      for (uint32_t seed : {0u, 0xDEADBEEFu}) {
        ASSERT_LE(off + n, buf.size());
        ASSERT_EQ(Extend(seed, buf.data() + off, n), ExtendPortable(seed, buf.data() + off, n))
            << "offset " << off << " length " << n << " seed " << seed;
      }
}

TEST(Crc32c, LargeInputMatchesPiecewise) {
  std::vector<uint8_t> buf(100000);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<uint8_t>(i * 7 + (i >> 9));
  uint32_t whole = Value(buf.data(), buf.size());
  EXPECT_EQ(whole, ExtendPortable(0, buf.data(), buf.size()));
  uint32_t piecewise = 0;
  for (size_t at = 0; at < buf.size(); at += 777)
    piecewise = Extend(piecewise, buf.data() + at, std::min<size_t>(777, buf.size() - at));
  EXPECT_EQ(piecewise, whole);
}

TEST(Crc32c, ExtendIsIncremental) {
  std::string a = "hello, ", b = "world";
  EXPECT_EQ(Extend(Value(a.data(), a.size()), b.data(), b.size()),
            Value((a + b).data(), a.size() + b.size()));
}

}  // namespace
}  // namespace headrace::crc32c
