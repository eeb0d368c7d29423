#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "log/checkpoint.h"
#include "log/coding.h"
#include "log/offset_index.h"
#include "log/testing.h"
#include "log/time_index.h"

namespace headrace {
namespace {

using testing::FileSize;
using testing::TempDir;

TEST(OffsetIndex, LookupFindsTheGreatestEntryAtOrBelowTheTarget) {
  TempDir dir;
  auto idx = OffsetIndex::Open(FileEnv::Default(), dir.sub("a.index"), Offset(100), 800);
  ASSERT_TRUE(idx.ok());
  OffsetIndex& ix = **idx;
  EXPECT_EQ(ix.Lookup(Offset(150)).position, FilePosition(0));  // empty: segment start
  for (int i = 1; i <= 10; ++i) ASSERT_TRUE(ix.Append(Offset(100 + i * 10), FilePosition(i * 1000)).ok());
  EXPECT_EQ(ix.Lookup(Offset(105)).position, FilePosition(0));
  EXPECT_EQ(ix.Lookup(Offset(110)).position, FilePosition(1000));
  EXPECT_EQ(ix.Lookup(Offset(159)).position, FilePosition(5000));
  EXPECT_EQ(ix.Lookup(Offset(10000)).position, FilePosition(10000));
  EXPECT_EQ(ix.Lookup(Offset(10000), FilePosition(4500)).position, FilePosition(4000));
  EXPECT_TRUE(ix.SanityCheck(10001, 1000).ok());
  EXPECT_FALSE(ix.SanityCheck(10000, 1000).ok());  // a position at the log end
  EXPECT_FALSE(ix.SanityCheck(10001, 100).ok());   // an offset in the next segment
  ix.TruncateToPosition(FilePosition(5000));
  EXPECT_EQ(ix.entries(), 4);
  EXPECT_EQ(ix.file().capacity(), 100);
}

TEST(OffsetIndex, PreallocatedThenTrimmedAndReopenedKeepsEntriesBigEndian) {
  TempDir dir;
  std::string path = dir.sub("b.index");
  {
    auto idx = OffsetIndex::Open(FileEnv::Default(), path, Offset(0), 4096);
    ASSERT_TRUE((*idx)->file().Preallocate().ok());
    EXPECT_EQ(FileSize(path), 4096);
    ASSERT_TRUE((*idx)->Append(Offset(0x01020304), FilePosition(0x0a0b0c0d)).ok());
    ASSERT_TRUE((*idx)->file().Trim().ok());
    EXPECT_EQ(FileSize(path), 8);
  }
  int fd = open(path.c_str(), O_RDONLY);
  uint8_t raw[8];
  ASSERT_EQ(pread(fd, raw, 8, 0), 8);
  close(fd);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(raw), 8), std::string("\x01\x02\x03\x04\x0a\x0b\x0c\x0d", 8));
  auto idx = OffsetIndex::Open(FileEnv::Default(), path, Offset(0), 4096);
  EXPECT_EQ((*idx)->entries(), 1);
  EXPECT_TRUE((*idx)->SanityCheck(INT32_MAX, INT32_MAX).ok());
}

TEST(OffsetIndex, GarbageFailsTheSanityCheck) {
  TempDir dir;
  std::string path = dir.sub("c.index");
  int fd = open(path.c_str(), O_CREAT | O_WRONLY, 0644);
  std::string zeros(64, '\0');
  ASSERT_EQ(write(fd, zeros.data(), zeros.size()), 64);  // a crash-left preallocated file
  close(fd);
  auto idx = OffsetIndex::Open(FileEnv::Default(), path, Offset(0), 4096);
  EXPECT_EQ((*idx)->SanityCheck(1 << 20, INT32_MAX).code(), StatusCode::kCorruption);
  fd = open(path.c_str(), O_WRONLY | O_TRUNC);
  ASSERT_EQ(write(fd, zeros.data(), 13), 13);  // not a whole number of entries
  close(fd);
  idx = OffsetIndex::Open(FileEnv::Default(), path, Offset(0), 4096);
  EXPECT_FALSE((*idx)->SanityCheck(1 << 20, INT32_MAX).ok());
}

TEST(TimeIndex, LookupBeforeAndMonotonicAppends) {
  TempDir dir;
  auto idx = TimeIndex::Open(FileEnv::Default(), dir.sub("a.timeindex"), Offset(50), 1200);
  TimeIndex& ix = **idx;
  ASSERT_TRUE(ix.MaybeAppend(TimestampMs(1000), Offset(55)).ok());
  ASSERT_TRUE(ix.MaybeAppend(TimestampMs(1000), Offset(60)).ok());  // not newer: skipped
  ASSERT_TRUE(ix.MaybeAppend(TimestampMs(2000), Offset(70)).ok());
  ASSERT_TRUE(ix.MaybeAppend(TimestampMs(3000), Offset(80)).ok());
  EXPECT_EQ(ix.entries(), 3);
  EXPECT_FALSE(ix.LookupBefore(TimestampMs(1000)));
  EXPECT_EQ(ix.LookupBefore(TimestampMs(1001))->offset, Offset(55));
  EXPECT_EQ(ix.LookupBefore(TimestampMs(3000))->offset, Offset(70));
  EXPECT_EQ(ix.Last()->timestamp, TimestampMs(3000));
  EXPECT_TRUE(ix.SanityCheck(100).ok());
  EXPECT_FALSE(ix.SanityCheck(30).ok());
  ix.TruncateToOffset(Offset(70));
  EXPECT_EQ(ix.entries(), 1);
}

TEST(Checkpoint, RoundTripsAndDetectsGarbage) {
  TempDir dir;
  auto none = ReadCheckpoint(*FileEnv::Default(), dir.path());
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(*none);
  Checkpoint c{Offset(5), Offset(1234), Offset(1000), 4321, true};
  ASSERT_TRUE(WriteCheckpoint(*FileEnv::Default(), dir.path(), c, true).ok());
  auto back = ReadCheckpoint(*FileEnv::Default(), dir.path());
  ASSERT_TRUE(back.ok() && *back);
  EXPECT_EQ((*back)->log_start_offset, Offset(5));
  EXPECT_EQ((*back)->recovery_offset, Offset(1234));
  EXPECT_EQ((*back)->recovery_segment, Offset(1000));
  EXPECT_EQ((*back)->recovery_position, 4321);
  EXPECT_TRUE((*back)->clean_shutdown);
  std::string path = dir.sub("log.checkpoint");
  int fd = open(path.c_str(), O_WRONLY);
  ASSERT_EQ(pwrite(fd, "9", 1, 44), 1);  // a digit changed: CRC no longer matches
  close(fd);
  EXPECT_EQ(ReadCheckpoint(*FileEnv::Default(), dir.path()).status().code(), StatusCode::kCorruption);
}

}  // namespace
}  // namespace headrace
