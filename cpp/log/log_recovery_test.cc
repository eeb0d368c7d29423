// Recovery: crash images (a copy of a live log directory) with torn or
// corrupted tails, and missing or garbled indexes.
#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <gtest/gtest.h>

#include "headrace/log.h"
#include "log/coding.h"
#include "log/filename.h"
#include "log/testing.h"

namespace headrace {
namespace {

using filename::FileKind;
using testing::Bytes;
using testing::FileSize;
using testing::MakeBatch;
using testing::TempDir;

struct BatchAt {
  int64_t position;
  int64_t size;
  Offset base;
};

// Walks the batch headers of a .log file.
std::vector<BatchAt> BatchesIn(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<BatchAt> out;
  for (size_t pos = 0; pos + 12 <= s.size();) {
    auto* p = reinterpret_cast<const uint8_t*>(s.data() + pos);
    int64_t size = 12 + coding::LoadBE32(p + 8);
    out.push_back({static_cast<int64_t>(pos), size, Offset(static_cast<int64_t>(coding::LoadBE64(p)))});
    pos += size;
  }
  return out;
}

std::vector<Offset> SegmentBases(const std::string& dir) {
  std::vector<Offset> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    auto p = filename::Parse(e.path().filename().string());
    if (p && p->type == filename::ParsedName::Type::kSegmentFile && p->kind == FileKind::kLog)
      out.push_back(p->base);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void FlipByte(const std::string& path, int64_t pos) {
  int fd = open(path.c_str(), O_RDWR);
  uint8_t b;
  ASSERT_EQ(pread(fd, &b, 1, pos), 1);
  b ^= 0x10;
  ASSERT_EQ(pwrite(fd, &b, 1, pos), 1);
  close(fd);
}

// A live log of `batches` batches (2 records, 500-byte values, about 14
// per 16 KiB segment), flushed after `flush_after` batches (0 = never),
// copied as a crash image into `image`.
void MakeCrashImage(const TempDir& live_dir, const std::string& image, int batches, int flush_after) {
  auto log = Log::Open(live_dir.sub("live"), testing::SmallConfig());
  ASSERT_TRUE(log.ok());
  for (int i = 0; i < batches; ++i) {
    std::string b = MakeBatch(2, 500, 1000 + i);
    ASSERT_TRUE((*log)->Append(Bytes(b)).ok());
    if (i + 1 == flush_after) {
      ASSERT_TRUE((*log)->Flush().ok());
    }
  }
  testing::CopyDir(live_dir.sub("live"), image);
}

TEST(LogRecovery, CleanCrashImageNeedsNoCutAndAppendsContinue) {
  TempDir dir;
  MakeCrashImage(dir, dir.sub("img"), 60, 20);
  auto log = Log::Open(dir.sub("img"), testing::SmallConfig());
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  const RecoveryReport& rep = (*log)->recovery_report();
  EXPECT_EQ(rep.truncated_at, Offset(-1));
  EXPECT_EQ(rep.truncated_bytes, 0);
  EXPECT_FALSE(rep.indexes_rebuilt);
  EXPECT_EQ(rep.segments, static_cast<int>(SegmentBases(dir.sub("img")).size()));
  EXPECT_EQ((*log)->end_offset(), Offset(120));
  EXPECT_EQ((*log)->flushed_offset(), Offset(120));  // recovery fsyncs what it validated
  EXPECT_EQ(testing::ReadAll(**log).size(), 120u);
  std::string b = MakeBatch(1, 1, 1);
  EXPECT_EQ((*log)->Append(Bytes(b))->base_offset, Offset(120));
}

TEST(LogRecovery, FlippedByteInTheLastSegmentCutsAtThatBatch) {
  TempDir dir;
  MakeCrashImage(dir, dir.sub("img"), 60, 20);
  Offset last = SegmentBases(dir.sub("img")).back();
  std::string path = filename::SegmentPath(dir.sub("img"), last, FileKind::kLog);
  auto batches = BatchesIn(path);
  ASSERT_GE(batches.size(), 3u);
  const BatchAt& victim = batches[2];
  FlipByte(path, victim.position + victim.size - 100);  // inside a record value
  int64_t size_before = FileSize(path);
  auto log = Log::Open(dir.sub("img"), testing::SmallConfig());
  ASSERT_TRUE(log.ok());
  const RecoveryReport& rep = (*log)->recovery_report();
  EXPECT_EQ(rep.truncated_at, victim.base);
  EXPECT_EQ(rep.truncated_bytes, size_before - victim.position);
  EXPECT_NE(rep.reason.find("CRC mismatch"), std::string::npos) << rep.reason;
  EXPECT_EQ((*log)->end_offset(), victim.base);
  EXPECT_EQ(FileSize(path), victim.position);
  auto recs = testing::ReadAll(**log);
  ASSERT_EQ(static_cast<int64_t>(recs.size()), victim.base.value());
  for (size_t i = 0; i < recs.size(); ++i) EXPECT_EQ(recs[i].offset, Offset(i));
  EXPECT_EQ(*recs.back().value, std::string(500, 'b'));
}

TEST(LogRecovery, TornTailIsCutAtTheLastWholeBatch) {
  TempDir dir;
  MakeCrashImage(dir, dir.sub("img"), 30, 0);
  Offset last = SegmentBases(dir.sub("img")).back();
  std::string path = filename::SegmentPath(dir.sub("img"), last, FileKind::kLog);
  auto batches = BatchesIn(path);
  ASSERT_EQ(truncate(path.c_str(), FileSize(path) - 10), 0);
  auto log = Log::Open(dir.sub("img"), testing::SmallConfig());
  ASSERT_TRUE(log.ok());
  EXPECT_EQ((*log)->recovery_report().truncated_at, batches.back().base);
  EXPECT_EQ((*log)->recovery_report().truncated_bytes, batches.back().size - 10);
  EXPECT_EQ((*log)->end_offset(), batches.back().base);
  EXPECT_EQ(FileSize(path), batches.back().position);
  EXPECT_EQ(testing::ReadAll(**log).size(), 58u);
}

TEST(LogRecovery, CorruptionInAnEarlierUnflushedSegmentDropsEverythingAfterIt) {
  TempDir dir;
  MakeCrashImage(dir, dir.sub("img"), 60, 1);
  auto bases = SegmentBases(dir.sub("img"));
  ASSERT_GE(bases.size(), 4u);
  std::string path = filename::SegmentPath(dir.sub("img"), bases[1], FileKind::kLog);
  auto batches = BatchesIn(path);
  FlipByte(path, batches[1].position + 30);  // inside the header: CRC covers it
  int64_t expected_cut = FileSize(path) - batches[1].position;
  for (size_t i = 2; i < bases.size(); ++i)
    expected_cut += FileSize(filename::SegmentPath(dir.sub("img"), bases[i], FileKind::kLog));
  auto log = Log::Open(dir.sub("img"), testing::SmallConfig());
  ASSERT_TRUE(log.ok());
  EXPECT_EQ((*log)->recovery_report().truncated_at, batches[1].base);
  EXPECT_EQ((*log)->recovery_report().truncated_bytes, expected_cut);
  EXPECT_EQ((*log)->segment_count(), 2);
  EXPECT_EQ(SegmentBases(dir.sub("img")).size(), 2u);
  EXPECT_EQ(static_cast<int64_t>(testing::ReadAll(**log).size()), batches[1].base.value());
}

TEST(LogRecovery, FlushedDataIsTrustedNotRescanned) {
  TempDir dir;
  MakeCrashImage(dir, dir.sub("img"), 30, 30);
  Offset first = SegmentBases(dir.sub("img")).front();
  std::string path = filename::SegmentPath(dir.sub("img"), first, FileKind::kLog);
  FlipByte(path, BatchesIn(path)[0].size - 50);  // below the flush point
  auto log = Log::Open(dir.sub("img"), testing::SmallConfig());
  ASSERT_TRUE(log.ok());
  EXPECT_EQ((*log)->recovery_report().truncated_at, Offset(-1));
  EXPECT_EQ((*log)->end_offset(), Offset(60));
}

class LogIndexRebuild : public ::testing::Test {
 protected:
  void SetUp() override {
    auto log = Log::Open(dir_.path(), testing::SmallConfig());
    ASSERT_TRUE(log.ok());
    for (int i = 0; i < 60; ++i) {
      std::string b = MakeBatch(2, 500, 1000 + 2 * i);
      ASSERT_TRUE((*log)->Append(Bytes(b)).ok());
    }
    ASSERT_TRUE((*log)->Close().ok());
    bases_ = SegmentBases(dir_.path());
    ASSERT_GE(bases_.size(), 4u);
  }
  // Reopens and checks the log reads back intact with working indexes.
  void ExpectRebuiltAndIntact() {
    auto log = Log::Open(dir_.path(), testing::SmallConfig());
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    EXPECT_TRUE((*log)->recovery_report().indexes_rebuilt);
    EXPECT_EQ((*log)->recovery_report().truncated_at, Offset(-1));
    EXPECT_EQ((*log)->end_offset(), Offset(120));
    EXPECT_EQ(testing::ReadAll(**log).size(), 120u);
    for (int64_t o = 0; o < 120; o += 7) {
      auto r = (*log)->Read(Offset(o), 1, Offset(120));
      ASSERT_TRUE(r.ok());
      EXPECT_EQ(r->first_batch_base, Offset(o & ~1));
    }
    EXPECT_EQ((*log)->OffsetForTime(TimestampMs(1000 + 77)).value().first, Offset(77));
    ASSERT_TRUE((*log)->Close().ok());
    auto again = Log::Open(dir_.path(), testing::SmallConfig());
    EXPECT_FALSE((*again)->recovery_report().indexes_rebuilt);  // the rebuilt ones hold
  }
  std::string Path(size_t i, FileKind k) { return filename::SegmentPath(dir_.path(), bases_[i], k); }

  TempDir dir_;
  std::vector<Offset> bases_;
};

TEST_F(LogIndexRebuild, MissingIndexesAreRebuilt) {
  int64_t had = FileSize(Path(1, FileKind::kOffsetIndex));
  ASSERT_GT(had, 0);
  ASSERT_EQ(unlink(Path(1, FileKind::kOffsetIndex).c_str()), 0);
  ASSERT_EQ(unlink(Path(bases_.size() - 1, FileKind::kTimeIndex).c_str()), 0);
  ExpectRebuiltAndIntact();
  EXPECT_EQ(FileSize(Path(1, FileKind::kOffsetIndex)), had);  // the same sparse entries
}

TEST_F(LogIndexRebuild, GarbledIndexesAreRebuilt) {
  std::string path = Path(0, FileKind::kOffsetIndex);
  int64_t size = FileSize(path);
  ASSERT_GE(size, 16);
  FlipByte(path, 8);  // second entry's relative offset goes wild
  ExpectRebuiltAndIntact();
}

TEST_F(LogIndexRebuild, WrongSizedIndexesAreRebuilt) {
  ASSERT_EQ(truncate(Path(2, FileKind::kTimeIndex).c_str(), 13), 0);
  ExpectRebuiltAndIntact();
}

TEST_F(LogIndexRebuild, LastEntryPointingAtTheWrongBatchIsRebuilt) {
  std::string path = Path(bases_.size() - 1, FileKind::kOffsetIndex);
  int64_t n = FileSize(path) / 8;
  ASSERT_GE(n, 1);
  int fd = open(path.c_str(), O_RDWR);
  uint8_t prev[4] = {0xff, 0xff, 0xff, 0xff};
  if (n >= 2) {
    ASSERT_EQ(pread(fd, prev, 4, (n - 2) * 8), 4);
  }
  uint8_t e[4];
  coding::StoreBE32(e, coding::LoadBE32(prev) + 1);  // still increasing, but wrong
  ASSERT_EQ(pwrite(fd, e, 4, (n - 1) * 8), 4);
  close(fd);
  ExpectRebuiltAndIntact();
}

TEST(LogRecovery, WithoutACheckpointEverythingIsValidated) {
  TempDir dir;
  {
    auto log = Log::Open(dir.path(), testing::SmallConfig());
    for (int i = 0; i < 40; ++i) {
      std::string b = MakeBatch(2, 500, 1);
      ASSERT_TRUE((*log)->Append(Bytes(b)).ok());
    }
    ASSERT_TRUE((*log)->Close().ok());
  }
  ASSERT_EQ(unlink(filename::CheckpointPath(dir.path()).c_str()), 0);
  std::string first = filename::SegmentPath(dir.path(), Offset(0), FileKind::kLog);
  FlipByte(first, BatchesIn(first)[5].position + 200);
  auto log = Log::Open(dir.path(), testing::SmallConfig());
  ASSERT_TRUE(log.ok());
  EXPECT_EQ((*log)->recovery_report().truncated_at, Offset(10));
  EXPECT_EQ((*log)->end_offset(), Offset(10));
  EXPECT_EQ((*log)->segment_count(), 1);
}

}  // namespace
}  // namespace headrace
