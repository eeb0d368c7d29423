#include "net/framer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace headrace::net {
namespace {

std::string Frame(const std::string& body) {
  uint32_t n = static_cast<uint32_t>(body.size());
  std::string out;
  out.push_back(static_cast<char>(n >> 24));
  out.push_back(static_cast<char>(n >> 16));
  out.push_back(static_cast<char>(n >> 8));
  out.push_back(static_cast<char>(n));
  return out + body;
}

// Feeds `bytes` in pieces of at most `step`, collecting every frame.
std::vector<std::string> FeedInSteps(Framer& f, const std::string& bytes, size_t step,
                                     int64_t max = 1 << 20) {
  std::vector<std::string> frames;
  size_t at = 0;
  while (at < bytes.size()) {
    std::span<uint8_t> space = f.PrepareRead();
    size_t n = std::min({step, space.size(), bytes.size() - at});
    std::memcpy(space.data(), bytes.data() + at, n);
    f.Commit(n);
    at += n;
    for (;;) {
      Framer::Result r = f.Next(max);
      if (r.status != Framer::Status::kFrame) break;
      frames.emplace_back(reinterpret_cast<char*>(r.frame.data()), r.frame.size());
    }
  }
  return frames;
}

TEST(FramerTest, ManyFramesInOneRead) {
  Framer f(64 * 1024);
  std::string bytes = Frame("one") + Frame("two") + Frame("three");
  auto frames = FeedInSteps(f, bytes, bytes.size());
  EXPECT_EQ(frames, (std::vector<std::string>{"one", "two", "three"}));
  EXPECT_EQ(f.buffered(), 0u);
}

TEST(FramerTest, FramesSplitAcrossReadsOneByteAtATime) {
  Framer f(8192);
  std::string bytes = Frame("hello") + Frame(std::string(300, 'x'));
  auto frames = FeedInSteps(f, bytes, 1);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0], "hello");
  EXPECT_EQ(frames[1], std::string(300, 'x'));
}

TEST(FramerTest, GrowsForLargeFrameAndShrinksAfter) {
  Framer f(8192);
  std::string big(1 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7);
  auto frames = FeedInSteps(f, Frame(big), 10000, 2 << 20);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0], big);
  EXPECT_GE(f.capacity(), big.size() + 4);
  f.PrepareRead();
  EXPECT_EQ(f.capacity(), 8192u);
}

TEST(FramerTest, CompactsPartialFrameWhenTailIsFull) {
  Framer f(8192);
  // Many frames of 1000 bytes fed in 3000-byte reads: every read boundary
  // splits a frame and the tail must be compacted to the front.
  std::string bytes;
  for (int i = 0; i < 50; ++i) bytes += Frame(std::string(996, static_cast<char>('a' + i % 26)));
  auto frames = FeedInSteps(f, bytes, 3000);
  ASSERT_EQ(frames.size(), 50u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(frames[i], std::string(996, static_cast<char>('a' + i % 26)));
}

TEST(FramerTest, RejectsOversizeZeroAndNegativeSizes) {
  for (uint32_t prefix : {0x7fffffffu, 0u, 0xfffffffbu, 1025u}) {
    Framer f(8192);
    std::span<uint8_t> space = f.PrepareRead();
    space[0] = static_cast<uint8_t>(prefix >> 24);
    space[1] = static_cast<uint8_t>(prefix >> 16);
    space[2] = static_cast<uint8_t>(prefix >> 8);
    space[3] = static_cast<uint8_t>(prefix);
    f.Commit(4);
    Framer::Result r = f.Next(1024);
    EXPECT_EQ(r.status, Framer::Status::kBadSize) << prefix;
    EXPECT_EQ(r.size, static_cast<int32_t>(prefix));
  }
}

TEST(FramerTest, FrameMayBeModifiedInPlace) {
  Framer f(8192);
  std::span<uint8_t> space = f.PrepareRead();
  std::string bytes = Frame("abc");
  std::memcpy(space.data(), bytes.data(), bytes.size());
  f.Commit(bytes.size());
  Framer::Result r = f.Next(100);
  ASSERT_EQ(r.status, Framer::Status::kFrame);
  r.frame[0] = 'X';
  EXPECT_EQ(std::string(reinterpret_cast<char*>(r.frame.data()), 3), "Xbc");
}

}  // namespace
}  // namespace headrace::net
