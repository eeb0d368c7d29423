// Removing data: retention by time and size, DeleteRecordsBefore, Truncate.
#include <gtest/gtest.h>

#include "headrace/log.h"
#include "headrace/record_batch.h"
#include "log/filename.h"
#include "log/testing.h"

namespace headrace {
namespace {

using filename::FileKind;
using testing::Bytes;
using testing::MakeBatch;
using testing::TempDir;

struct SegmentFacts {
  Offset base;
  int64_t bytes = 0;
  int64_t max_ts = -1;
};

// 80 batches of 2 records with 500-byte values; batch i has timestamps
// 1000 * i and 1000 * i + 1. Returns what each segment holds.
std::vector<SegmentFacts> Fill(Log& log) {
  std::vector<SegmentFacts> segs;
  for (int i = 0; i < 80; ++i) {
    int before = log.segment_count();
    std::string b = MakeBatch(2, 500, 1000 * i);
    auto a = log.Append(Bytes(b));
    EXPECT_TRUE(a.ok());
    if (segs.empty() || log.segment_count() != before) segs.push_back({a->base_offset});
    segs.back().bytes += a->bytes;
    segs.back().max_ts = 1000 * i + 1;
  }
  return segs;
}

bool LogFileExists(const TempDir& d, Offset base) {
  return testing::FileSize(filename::SegmentPath(d.path(), base, FileKind::kLog)) >= 0;
}

TEST(LogRetention, ByTimeRemovesExactlyTheExpiredSegments) {
  TempDir dir;
  auto log = std::move(Log::Open(dir.path(), testing::SmallConfig())).value();
  auto segs = Fill(*log);
  ASSERT_GE(segs.size(), 5u);
  LogConfig c = testing::SmallConfig();
  c.retention_ms = 10000;
  log->SetConfig(c);
  // Segments 0..2 have newest timestamps below now - retention; segment 3 does not.
  TimestampMs now(segs[2].max_ts + 10000 + 1);
  ASSERT_GE(segs[3].max_ts, now.value() - 10000);  // not expired
  auto rep = log->ApplyRetention(now);
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(rep->segments_deleted, 3);
  EXPECT_EQ(rep->bytes_deleted, segs[0].bytes + segs[1].bytes + segs[2].bytes);
  EXPECT_EQ(rep->new_start_offset, segs[3].base);
  EXPECT_EQ(log->start_offset(), segs[3].base);
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(LogFileExists(dir, segs[i].base));
  EXPECT_TRUE(LogFileExists(dir, segs[3].base));
  EXPECT_EQ(log->Read(segs[3].base - 1, 100, log->end_offset()).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(testing::ReadAll(*log, segs[3].base).front().offset, segs[3].base);
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    EXPECT_EQ(e.path().string().find(".deleted"), std::string::npos);
  ASSERT_TRUE(log->Close().ok());
  auto reopened = std::move(Log::Open(dir.path(), testing::SmallConfig())).value();
  EXPECT_EQ(reopened->start_offset(), segs[3].base);
}

TEST(LogRetention, BySizeRemovesOldestWhileTheRestStaysAboveTheLimit) {
  TempDir dir;
  auto log = std::move(Log::Open(dir.path(), testing::SmallConfig())).value();
  auto segs = Fill(*log);
  LogConfig c = testing::SmallConfig();
  c.retention_bytes = log->size_bytes() - segs[0].bytes - segs[1].bytes;
  log->SetConfig(c);
  auto rep = log->ApplyRetention(TimestampMs(0));
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(rep->segments_deleted, 2);
  EXPECT_EQ(rep->bytes_deleted, segs[0].bytes + segs[1].bytes);
  EXPECT_EQ(log->size_bytes(), c.retention_bytes);
  EXPECT_EQ(log->start_offset(), segs[2].base);
  EXPECT_EQ(log->ApplyRetention(TimestampMs(0))->segments_deleted, 0);
}

TEST(LogRetention, NeverDeletesTheActiveSegment) {
  TempDir dir;
  auto log = std::move(Log::Open(dir.path(), testing::SmallConfig())).value();
  auto segs = Fill(*log);
  LogConfig c = testing::SmallConfig();
  c.retention_ms = 0;
  c.retention_bytes = 0;
  log->SetConfig(c);
  auto rep = log->ApplyRetention(TimestampMs(INT64_MAX / 2));
  EXPECT_EQ(rep->segments_deleted, static_cast<int>(segs.size()) - 1);
  EXPECT_EQ(log->segment_count(), 1);
  EXPECT_EQ(log->start_offset(), segs.back().base);
  EXPECT_EQ(log->end_offset(), Offset(160));
}

TEST(LogRetention, ASliceKeepsADeletedSegmentReadable) {
  TempDir dir;
  auto log = std::move(Log::Open(dir.path(), testing::SmallConfig())).value();
  auto segs = Fill(*log);
  auto r = log->Read(Offset(0), 4096, log->end_offset());
  ASSERT_TRUE(r.ok());
  std::string before = testing::SliceBytes(*r);
  ASSERT_TRUE(log->DeleteRecordsBefore(segs[2].base).ok());
  EXPECT_FALSE(LogFileExists(dir, segs[0].base));
  EXPECT_EQ(testing::SliceBytes(*r), before);
  EXPECT_EQ(static_cast<int64_t>(before.size()), r->bytes);
}

TEST(LogRetention, DeleteRecordsBeforeMovesTheStartInsideASegment) {
  TempDir dir;
  auto log = std::move(Log::Open(dir.path(), testing::SmallConfig())).value();
  auto segs = Fill(*log);
  Offset cut = segs[2].base + 3;  // inside segment 2, inside a batch
  ASSERT_TRUE(log->DeleteRecordsBefore(cut).ok());
  EXPECT_EQ(log->start_offset(), cut);
  EXPECT_EQ(log->segment_count(), static_cast<int>(segs.size()) - 2);
  EXPECT_EQ(log->Read(cut - 1, 100, log->end_offset()).status().code(), StatusCode::kOutOfRange);
  auto r = log->Read(cut, 100, log->end_offset());
  EXPECT_EQ(r->first_batch_base, cut - 1);  // whole batches: the one holding `cut`
  EXPECT_EQ(log->DeleteRecordsBefore(log->end_offset() + 1).code(), StatusCode::kOutOfRange);
  EXPECT_TRUE(log->DeleteRecordsBefore(Offset(0)).ok());  // below the start: nothing
  EXPECT_EQ(log->start_offset(), cut);
  ASSERT_TRUE(log->Close().ok());
  auto reopened = std::move(Log::Open(dir.path(), testing::SmallConfig())).value();
  EXPECT_EQ(reopened->start_offset(), cut);
  EXPECT_EQ(reopened->end_offset(), Offset(160));
}

TEST(LogTruncate, AcrossSegmentsThenAppendAndReopen) {
  TempDir dir;
  auto log = std::move(Log::Open(dir.path(), testing::SmallConfig())).value();
  auto segs = Fill(*log);
  Offset to = segs[1].base + 4;  // a batch boundary inside segment 1
  ASSERT_TRUE(log->Truncate(to).ok());
  EXPECT_EQ(log->end_offset(), to);
  EXPECT_EQ(log->segment_count(), 2);
  for (size_t i = 2; i < segs.size(); ++i) EXPECT_FALSE(LogFileExists(dir, segs[i].base));
  auto recs = testing::ReadAll(*log);
  EXPECT_EQ(static_cast<int64_t>(recs.size()), to.value());
  std::string b = MakeBatch(3, 10, 5);
  EXPECT_EQ(log->Append(Bytes(b))->base_offset, to);
  EXPECT_EQ(log->OffsetForTime(TimestampMs(1000 * 40)).status().code(),
            StatusCode::kNotFound);  // the later batches are gone
  EXPECT_EQ(log->OffsetForTime(TimestampMs(1000 * 3)).value().first, Offset(6));
  ASSERT_TRUE(log->Close().ok());
  auto reopened = std::move(Log::Open(dir.path(), testing::SmallConfig())).value();
  EXPECT_EQ(reopened->end_offset(), to + 3);
  EXPECT_FALSE(reopened->recovery_report().indexes_rebuilt);
  EXPECT_EQ(testing::ReadAll(*reopened).size(), static_cast<size_t>(to.value() + 3));
}

TEST(LogTruncate, InsideABatchRemovesTheWholeBatch) {
  TempDir dir;
  auto log = std::move(Log::Open(dir.path(), testing::SmallConfig())).value();
  Fill(*log);
  ASSERT_TRUE(log->Truncate(Offset(101)).ok());
  EXPECT_EQ(log->end_offset(), Offset(100));
  EXPECT_EQ(log->Truncate(Offset(101)).code(), StatusCode::kOutOfRange);
  auto mt = log->MaxTimestamp();
  EXPECT_EQ(mt->first, TimestampMs(1000 * 49 + 1));
  EXPECT_EQ(mt->second, Offset(99));
}

TEST(LogTruncate, ToASegmentBaseKeepsItEmptyAndActive) {
  TempDir dir;
  auto log = std::move(Log::Open(dir.path(), testing::SmallConfig())).value();
  auto segs = Fill(*log);
  ASSERT_TRUE(log->Truncate(segs[2].base).ok());
  EXPECT_EQ(log->segment_count(), 3);
  EXPECT_EQ(testing::FileSize(filename::SegmentPath(dir.path(), segs[2].base, FileKind::kLog)), 0);
  for (int i = 0; i < 30; ++i) {  // refill: rolls again from here
    std::string b = MakeBatch(2, 500, 1);
    ASSERT_TRUE(log->Append(Bytes(b)).ok());
  }
  EXPECT_GT(log->segment_count(), 3);
  EXPECT_EQ(testing::ReadAll(*log).size(), static_cast<size_t>(segs[2].base.value() + 60));
}

TEST(LogTruncate, FullyAndStartAtAboveTheEndKeepsOnlyAnEmptySegmentThere) {
  TempDir dir;
  auto log = std::move(Log::Open(dir.path(), testing::SmallConfig())).value();
  auto segs = Fill(*log);
  ASSERT_GT(segs.size(), 2u);
  const Offset at(1000);
  ASSERT_TRUE(log->TruncateFullyAndStartAt(at).ok());
  EXPECT_EQ(log->start_offset(), at);
  EXPECT_EQ(log->end_offset(), at);
  EXPECT_EQ(log->flushed_offset(), at);
  EXPECT_EQ(log->segment_count(), 1);
  for (const SegmentFacts& s : segs) EXPECT_FALSE(LogFileExists(dir, s.base));
  EXPECT_TRUE(LogFileExists(dir, at));
  std::string b = MakeBatch(3, 10, 5);
  std::span<uint8_t> bytes = Bytes(b);
  SetBaseOffset(bytes, at);  // a follower's append keeps the leader's offsets
  auto appended = log->AppendWithOffsets(bytes);
  ASSERT_TRUE(appended.ok()) << appended.status().ToString();
  EXPECT_EQ(appended->base_offset, at);
  ASSERT_TRUE(log->Close().ok());
  auto reopened = std::move(Log::Open(dir.path(), testing::SmallConfig())).value();
  EXPECT_EQ(reopened->start_offset(), at);
  EXPECT_EQ(reopened->end_offset(), at + 3);
  auto recs = testing::ReadAll(*reopened, at);
  ASSERT_EQ(recs.size(), 3u);
  EXPECT_EQ(recs[0].offset, at);
}

TEST(LogTruncate, FullyAndStartAtAnOldSegmentBaseOrBelowTheStart) {
  TempDir dir;
  auto log = std::move(Log::Open(dir.path(), testing::SmallConfig())).value();
  auto segs = Fill(*log);
  ASSERT_TRUE(log->TruncateFullyAndStartAt(segs[1].base).ok());  // its name is reused
  EXPECT_EQ(log->end_offset(), segs[1].base);
  EXPECT_TRUE(testing::ReadAll(*log).empty());
  ASSERT_TRUE(log->TruncateFullyAndStartAt(Offset(0)).ok());
  EXPECT_EQ(log->start_offset(), Offset(0));
  EXPECT_EQ(log->end_offset(), Offset(0));
  std::string b = MakeBatch(2, 10, 5);
  EXPECT_EQ(log->Append(Bytes(b))->base_offset, Offset(0));
  EXPECT_EQ(log->TruncateFullyAndStartAt(Offset(-1)).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace headrace
