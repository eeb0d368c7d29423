#include "log/compression.h"

#include <gtest/gtest.h>

#include <random>

#include "log/coding.h"

namespace headrace::compression {
namespace {

constexpr Compression kCodecs[] = {Compression::kGzip, Compression::kSnappy, Compression::kLz4,
                                   Compression::kZstd};

uint32_t LoadLE32(const uint8_t* p) {
  return p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

std::span<const uint8_t> Span(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// Compressible text with some noise, `n` bytes.
std::string Sample(size_t n, uint32_t seed = 7) {
  std::mt19937 rng(seed);
  std::string s;
  while (s.size() < n) s += "record-" + std::to_string(rng() % 1000) + ";";
  s.resize(n);
  return s;
}

TEST(Compression, EveryCodecRoundTripsSmallEmptyAndMultiBlockInputs) {
  for (Compression c : kCodecs) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{100}, size_t{70000}, size_t{1} << 20}) {
      std::string in = Sample(n), packed, out;
      ASSERT_TRUE(Compress(c, Span(in), &packed).ok()) << CodecName(c);
      Status st = Decompress(c, Span(packed), &out);
      ASSERT_TRUE(st.ok()) << CodecName(c) << " " << n << ": " << st.ToString();
      EXPECT_EQ(out, in) << CodecName(c) << " " << n;
      if (n >= 100) {
        EXPECT_LT(packed.size(), in.size()) << CodecName(c);
      }
    }
  }
}

TEST(Compression, FramingsAreTheOnesKafkaClientsWrite) {
  std::string in = Sample(100000), packed;
  ASSERT_TRUE(Compress(Compression::kGzip, Span(in), &packed).ok());
  EXPECT_EQ(packed.substr(0, 2), "\x1f\x8b");  // gzip member
  ASSERT_TRUE(Compress(Compression::kSnappy, Span(in), &packed).ok());
  EXPECT_EQ(packed.substr(0, 8), std::string("\x82SNAPPY\0", 8));  // xerial
  EXPECT_EQ(coding::LoadBE32(Span(packed).data() + 8), 1u);
  EXPECT_EQ(coding::LoadBE32(Span(packed).data() + 12), 1u);
  ASSERT_TRUE(Compress(Compression::kLz4, Span(in), &packed).ok());
  EXPECT_EQ(LoadLE32(Span(packed).data()), 0x184D2204u);  // LZ4 frame magic
  ASSERT_TRUE(Compress(Compression::kZstd, Span(in), &packed).ok());
  EXPECT_EQ(LoadLE32(Span(packed).data()), 0xFD2FB528u);  // zstd frame magic
}

TEST(Compression, PlainSnappyAndConcatenatedStreamsAreAccepted) {
  std::string a = Sample(5000, 1), b = Sample(3000, 2), pa, pb, out;
  // One raw snappy block, as librdkafka writes it: reuse a xerial block body.
  ASSERT_TRUE(Compress(Compression::kSnappy, Span(a), &pa).ok());
  std::string raw = pa.substr(16 + 4);  // one block: 5000 < 32 KiB
  ASSERT_TRUE(Decompress(Compression::kSnappy, Span(raw), &out).ok());
  EXPECT_EQ(out, a);
  for (Compression c : {Compression::kGzip, Compression::kLz4, Compression::kZstd}) {
    ASSERT_TRUE(Compress(c, Span(a), &pa).ok());
    ASSERT_TRUE(Compress(c, Span(b), &pb).ok());
    std::string both = pa + pb;
    Status st = Decompress(c, Span(both), &out);
    ASSERT_TRUE(st.ok()) << CodecName(c) << ": " << st.ToString();
    EXPECT_EQ(out, a + b) << CodecName(c);
  }
}

TEST(Compression, TruncatedOrGarbageInputIsCorruption) {
  std::string in = Sample(50000), packed, out;
  for (Compression c : kCodecs) {
    ASSERT_TRUE(Compress(c, Span(in), &packed).ok());
    for (size_t cut : {packed.size() / 2, packed.size() - 1}) {
      Status st = Decompress(c, Span(packed.substr(0, cut)), &out);
      EXPECT_EQ(st.code(), StatusCode::kCorruption) << CodecName(c) << " cut at " << cut;
    }
    std::string garbage = Sample(1000, 99);
    EXPECT_EQ(Decompress(c, Span(garbage), &out).code(), StatusCode::kCorruption) << CodecName(c);
    EXPECT_EQ(Decompress(c, Span(std::string()), &out).code(), StatusCode::kCorruption)
        << CodecName(c);
  }
  EXPECT_EQ(Decompress(Compression::kNone, Span(in), &out).code(), StatusCode::kInvalidArgument);
}

TEST(Compression, ADecompressionBombStopsAtTheLimit) {
  std::string zeros(8 << 20, '\0'), packed;  // 8 MiB of zeros: tiny when packed
  for (Compression c : kCodecs) {
    std::string out;
    ASSERT_TRUE(Compress(c, Span(zeros), &packed).ok());
    ASSERT_LT(packed.size(), zeros.size() / 20) << CodecName(c);
    Status st = Decompress(c, Span(packed), &out, /*max_out=*/1 << 20);
    EXPECT_EQ(st.code(), StatusCode::kCorruption) << CodecName(c);
    EXPECT_NE(st.message().find("inflate above"), std::string::npos) << st.message();
    EXPECT_LE(out.capacity(), (size_t{2} << 20) + 64) << CodecName(c);  // never grew past it
    ASSERT_TRUE(Decompress(c, Span(packed), &out, zeros.size()).ok()) << CodecName(c);
    EXPECT_EQ(out.size(), zeros.size());
  }
}

}  // namespace
}  // namespace headrace::compression
