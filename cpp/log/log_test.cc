#include "headrace/log.h"

#include <gtest/gtest.h>

#include <random>

#include "log/coding.h"
#include "log/filename.h"
#include "log/record_batch_internal.h"
#include "log/testing.h"

namespace headrace {
namespace {

using testing::Bytes;
using testing::MakeBatch;
using testing::MakeBatches;
using testing::TempDir;

std::unique_ptr<Log> OpenLog(const std::string& dir, const LogConfig& c = testing::SmallConfig()) {
  auto log = Log::Open(dir, c);
  EXPECT_TRUE(log.ok()) << log.status().ToString();
  return log.ok() ? std::move(log).value() : nullptr;
}

TEST(Log, AppendAssignsOffsetsAndReadsBackEveryRecord) {
  TempDir dir;
  auto log = OpenLog(dir.path());
  std::vector<RecordInput> in(4);
  in[0].key = "a";
  in[0].value = "1";
  in[0].headers = {{"h", "x"}};
  in[1].value = "";
  in[2].key = "c";
  in[3].value = std::string(2 << 20, 'z');
  for (auto& r : in) r.timestamp = TimestampMs(500);
  std::string b1 = BuildBatch(in), b2 = MakeBatch(3, 5, 600, /*null_keys=*/true);
  LogConfig big = testing::SmallConfig();
  big.max_message_bytes = 8 << 20;
  log->SetConfig(big);
  auto a1 = log->Append(Bytes(b1));
  ASSERT_TRUE(a1.ok()) << a1.status().ToString();
  EXPECT_EQ(a1->base_offset, Offset(0));
  EXPECT_EQ(a1->last_offset, Offset(3));
  auto a2 = log->Append(Bytes(b2));
  ASSERT_TRUE(a2.ok());
  EXPECT_EQ(a2->base_offset, Offset(4));
  EXPECT_EQ(a2->max_timestamp, TimestampMs(602));
  EXPECT_EQ(a2->offset_of_max_timestamp, Offset(6));
  EXPECT_EQ(log->end_offset(), Offset(7));
  auto recs = testing::ReadAll(*log);
  ASSERT_EQ(recs.size(), 7u);
  for (int i = 0; i < 7; ++i) EXPECT_EQ(recs[i].offset, Offset(i));
  EXPECT_EQ(recs[0].headers[0].value, "x");
  EXPECT_FALSE(recs[1].key);
  EXPECT_EQ(recs[1].value, "");
  EXPECT_FALSE(recs[2].value);
  EXPECT_EQ(recs[3].value->size(), 2u << 20);
  EXPECT_FALSE(recs[4].key);  // null_keys: every third from the batch start
  EXPECT_EQ(recs[5].key, "k1");
}

TEST(Log, OffsetsStayDenseAcrossManySegments) {
  TempDir dir;
  LogConfig c = testing::SmallConfig();
  c.segment_bytes = 4096;
  auto log = OpenLog(dir.path(), c);
  int64_t expected = 0;
  for (int i = 0; i < 300; ++i) {
    std::string b = MakeBatch(1 + i % 7, 40 + i % 13, 1000 + i);
    auto a = log->Append(Bytes(b));
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    ASSERT_EQ(a->base_offset, Offset(expected));
    expected += 1 + i % 7;
  }
  EXPECT_GT(log->segment_count(), 10);
  auto recs = testing::ReadAll(*log);
  ASSERT_EQ(static_cast<int64_t>(recs.size()), expected);
  for (int64_t i = 0; i < expected; ++i) ASSERT_EQ(recs[i].offset, Offset(i));
  for (int64_t o = 0; o < expected; o += 17) {  // every read starts at the batch holding o
    auto r = log->Read(Offset(o), 1, log->end_offset());
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r->slices.size(), 1u);
    std::string bytes = testing::SliceBytes(*r);
    auto h = ValidateBatch({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
    ASSERT_TRUE(h.ok());
    EXPECT_LE(h->base_offset, Offset(o));
    EXPECT_GE(h->last_offset(), Offset(o));
    EXPECT_EQ(r->first_batch_base, h->base_offset);
  }
  // Segment files are named by their base offsets, each the previous end.
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    files += e.path().extension() == ".log";
  EXPECT_EQ(files, log->segment_count());
}

TEST(Log, ReadHonoursMaxBytesUpperBoundAndMinOneBatch) {
  TempDir dir;
  auto log = OpenLog(dir.path());
  std::string b = MakeBatches(10, 2, 100, 1);  // 10 batches of 2 records
  ASSERT_TRUE(log->Append(Bytes(b)).ok());
  int64_t one = b.size() / 10;
  auto r = log->Read(Offset(0), 3 * one + 5, log->end_offset());
  EXPECT_EQ(r->bytes, 3 * one);
  r = log->Read(Offset(3), 10 * one, Offset(8));  // batches [2,3] .. [6,7]
  EXPECT_EQ(r->first_batch_base, Offset(2));
  EXPECT_EQ(r->bytes, 3 * one);
  r = log->Read(Offset(0), 1, log->end_offset());
  EXPECT_EQ(r->bytes, one);  // one whole batch although larger than max_bytes
  r = log->Read(Offset(0), 1, log->end_offset(), /*min_one_batch=*/false);
  EXPECT_EQ(r->bytes, 0);
  r = log->Read(log->end_offset(), 100, log->end_offset());
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->slices.empty());
  EXPECT_EQ(log->Read(Offset(21), 100, Offset(30)).status().code(), StatusCode::kOutOfRange);
}

// Read's slice ends come from the offset index plus short scans; this checks
// them against a plain walk over every batch, for random offsets, budgets and
// bounds, over many segments with sparse indexes and uneven batch sizes.
TEST(Log, ReadMatchesAWalkOverEveryBatch) {
  TempDir dir;
  LogConfig c = testing::SmallConfig();
  c.segment_bytes = 16 << 10;
  c.index_interval_bytes = 1500;
  auto log = OpenLog(dir.path(), c);
  struct Batch {
    int64_t base, last;
    std::string bytes;
  };
  std::vector<Batch> model;
  std::mt19937 rng(8);
  int64_t next = 0;
  for (int i = 0; i < 300; ++i) {
    int records = 1 + rng() % 5;
    std::string b = MakeBatch(records, 10 + rng() % 900, 1000 + next);
    ASSERT_TRUE(log->Append(Bytes(b)).ok());
    model.push_back({next, next + records - 1, b});
    next += records;
  }
  ASSERT_GT(log->segment_count(), 5);
  for (int trial = 0; trial < 3000; ++trial) {
    const int64_t offset = rng() % (next + 1);
    const int64_t bound = offset + rng() % (next + 2 - offset);
    int64_t max_bytes = rng() % 3 == 0 ? rng() % 2000 : rng() % 40000;
    if (rng() % 3 == 0) {  // exactly the size of the next k batches
      max_bytes = 0;
      int k = rng() % 30;
      for (const Batch& b : model)
        if (b.last >= offset && k-- > 0) max_bytes += b.bytes.size();
    }
    const bool min_one = rng() % 2;
    std::string want;
    int64_t want_first = -1;
    for (const Batch& b : model) {
      if (b.last < offset) continue;
      if (b.last >= bound) break;
      const bool first = want.empty();
      if (want.size() + b.bytes.size() > static_cast<size_t>(max_bytes) && !(first && min_one)) break;
      if (first) want_first = b.base;
      want += b.bytes;
    }
    auto r = log->Read(Offset(offset), max_bytes, Offset(bound), min_one);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    SCOPED_TRACE("offset " + std::to_string(offset) + " bound " + std::to_string(bound) +
                 " max_bytes " + std::to_string(max_bytes) + " min_one " + std::to_string(min_one));
    ASSERT_EQ(r->bytes, static_cast<int64_t>(want.size()));
    ASSERT_EQ(r->first_batch_base.value(), want_first);
    ASSERT_EQ(testing::SliceBytes(*r), want);
  }
}

struct BadBatchCase {
  const char* name;
  void (*spoil)(std::string&);
  StatusCode code;
  const char* message;
};

void FixCrc(std::string& b) {
  auto* p = reinterpret_cast<uint8_t*>(b.data());
  coding::StoreBE32(p + batch::kCrcPos, batch::ComputeCrc({p, b.size()}));
}

class BadBatches : public ::testing::TestWithParam<BadBatchCase> {};

TEST_P(BadBatches, AreRefusedWithAPreciseErrorAndTheLogIsUntouched) {
  TempDir dir;
  auto log = OpenLog(dir.path());
  std::string good = MakeBatches(3, 2, 50, 1);
  ASSERT_TRUE(log->Append(Bytes(good)).ok());
  auto sizes = testing::DirSizes(dir.path());
  std::string bad = MakeBatch(3, 50, 10);
  GetParam().spoil(bad);
  std::string input = MakeBatch(2, 10, 5) + bad;  // a good batch first: still nothing written
  auto r = log->Append(Bytes(input));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), GetParam().code);
  EXPECT_NE(r.status().message().find(GetParam().message), std::string::npos) << r.status().message();
  EXPECT_EQ(r.status().message().rfind("batch 1: ", 0), 0u) << r.status().message();
  EXPECT_EQ(log->end_offset(), Offset(6));
  EXPECT_EQ(testing::DirSizes(dir.path()), sizes);
  EXPECT_EQ(testing::ReadAll(*log).size(), 6u);
}

INSTANTIATE_TEST_SUITE_P(
    Log, BadBatches,
    ::testing::Values(
        BadBatchCase{"crc", [](std::string& b) { b[b.size() - 1] ^= 1; }, StatusCode::kCorruption,
                     "CRC mismatch"},
        BadBatchCase{"magic", [](std::string& b) { b[16] = 1; }, StatusCode::kCorruption, "magic 1"},
        BadBatchCase{"length_too_long",
                     [](std::string& b) {
                       coding::StoreBE32(reinterpret_cast<uint8_t*>(b.data()) + 8, b.size());
                     },
                     StatusCode::kCorruption, "runs past"},
        BadBatchCase{"length_too_short",
                     [](std::string& b) {
                       coding::StoreBE32(reinterpret_cast<uint8_t*>(b.data()) + 8, b.size() - 20);
                     },
                     StatusCode::kCorruption, "CRC mismatch"},
        BadBatchCase{"record_count",
                     [](std::string& b) {
                       auto* p = reinterpret_cast<uint8_t*>(b.data());
                       coding::StoreBE32(p + batch::kRecordCountPos, 2);
                       coding::StoreBE32(p + batch::kLastOffsetDeltaPos, 1);
                       FixCrc(b);
                     },
                     StatusCode::kCorruption, "record count 2 is smaller"},
        BadBatchCase{"too_large", [](std::string& b) { b = MakeBatch(2, 2 << 20, 1); },
                     StatusCode::kTooLarge, "max.message.bytes"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(Log, EmptyAppendIsInvalidArgument) {
  TempDir dir;
  auto log = OpenLog(dir.path());
  EXPECT_EQ(log->Append({}).status().code(), StatusCode::kInvalidArgument);
}

TEST(Log, LogAppendTimeStampsTheBatches) {
  TempDir dir;
  LogConfig c = testing::SmallConfig();
  c.timestamp_type = TimestampType::kLogAppendTime;
  auto log = OpenLog(dir.path(), c);
  std::string b = MakeBatch(3, 4, 5);
  auto a = log->Append(Bytes(b));
  ASSERT_TRUE(a.ok());
  EXPECT_GT(a->log_append_time, TimestampMs(1600000000000));
  auto recs = testing::ReadAll(*log);
  ASSERT_EQ(recs.size(), 3u);
  EXPECT_EQ(recs[2].timestamp, a->log_append_time);
}

TEST(Log, OffsetForTimeAndMaxTimestamp) {
  TempDir dir;
  auto log = OpenLog(dir.path());
  EXPECT_EQ(log->MaxTimestamp().status().code(), StatusCode::kNotFound);
  // 100 batches of 5 records; batch b has timestamps 10000 + 10b .. +4.
  for (int b = 0; b < 100; ++b) {
    std::string batch = MakeBatch(5, 100, 10000 + 10 * b);
    ASSERT_TRUE(log->Append(Bytes(batch)).ok());
  }
  ASSERT_GT(log->segment_count(), 3);
  EXPECT_EQ(log->OffsetForTime(TimestampMs(0)).value().first, Offset(0));
  EXPECT_EQ(log->OffsetForTime(TimestampMs(10002)).value().first, Offset(2));
  EXPECT_EQ(log->OffsetForTime(TimestampMs(10005)).value().first, Offset(5));  // a gap: next batch's first
  EXPECT_EQ(log->OffsetForTime(TimestampMs(10000 + 10 * 77 + 3)).value().first, Offset(77 * 5 + 3));
  EXPECT_EQ(log->OffsetForTime(TimestampMs(20000)).status().code(), StatusCode::kNotFound);
  auto mt = log->MaxTimestamp();
  ASSERT_TRUE(mt.ok());
  EXPECT_EQ(mt->first, TimestampMs(10000 + 990 + 4));
  EXPECT_EQ(mt->second, Offset(499));
  ASSERT_TRUE(log->DeleteRecordsBefore(Offset(7)).ok());
  EXPECT_EQ(log->OffsetForTime(TimestampMs(0)).value().first, Offset(7));
}

TEST(Log, MaxTimestampFindsTheExactRecordInsideABatch) {
  TempDir dir;
  auto log = OpenLog(dir.path());
  std::vector<RecordInput> in(3);
  int64_t ts[] = {50, 90, 70};
  for (int i = 0; i < 3; ++i) {
    in[i].value = "v";
    in[i].timestamp = TimestampMs(ts[i]);
  }
  std::string b = MakeBatch(2, 1, 10) + BuildBatch(in) + MakeBatch(2, 1, 20);
  auto a = log->Append(Bytes(b));
  EXPECT_EQ(a->offset_of_max_timestamp, Offset(3));
  ASSERT_TRUE(log->Close().ok());
  auto reopened = OpenLog(dir.path());
  auto mt = reopened->MaxTimestamp();
  EXPECT_EQ(mt->first, TimestampMs(90));
  EXPECT_EQ(mt->second, Offset(3));
}

// Abandon (the log is being deleted) closes without a flush or a clean
// checkpoint; a reader's slice stays readable until it is dropped.
TEST(Log, AbandonClosesWithoutFlushing) {
  TempDir dir;
  auto log = OpenLog(dir.path());
  std::string b = MakeBatches(20, 3, 200, 1000);
  ASSERT_TRUE(log->Append(Bytes(b)).ok());
  auto held = log->Read(Offset(0), 1 << 20, log->end_offset());
  ASSERT_TRUE(held.ok());
  ASSERT_EQ(log->flushed_offset(), Offset(0));
  ASSERT_TRUE(log->Abandon().ok());
  EXPECT_EQ(log->flushed_offset(), Offset(0));  // nothing was fsynced for it
  EXPECT_EQ(log->Append(Bytes(b)).status().code(), StatusCode::kClosed);
  EXPECT_EQ(log->Read(Offset(0), 1, Offset(1)).status().code(), StatusCode::kClosed);
  EXPECT_EQ(log->Flush().code(), StatusCode::kClosed);
  EXPECT_EQ(log->Abandon().code(), StatusCode::kClosed);
  EXPECT_EQ(log->Close().code(), StatusCode::kClosed);
  EXPECT_EQ(testing::SliceBytes(*held), b);
}

TEST(Log, ReopenAfterCloseKeepsEverythingAndAppendsContinue) {
  TempDir dir;
  std::vector<std::string> values;
  {
    auto log = OpenLog(dir.path());
    for (int i = 0; i < 80; ++i) {
      std::string b = MakeBatch(3, 200, 1000 + i);
      ASSERT_TRUE(log->Append(Bytes(b)).ok());
    }
    for (const Record& r : testing::ReadAll(*log)) values.push_back(*r.value);
    ASSERT_TRUE(log->Close().ok());
    EXPECT_EQ(log->Append(Bytes(values[0])).status().code(), StatusCode::kClosed);
    EXPECT_EQ(log->Read(Offset(0), 1, Offset(1)).status().code(), StatusCode::kClosed);
    EXPECT_EQ(log->Close().code(), StatusCode::kClosed);
  }
  auto log = OpenLog(dir.path());
  EXPECT_EQ(log->end_offset(), Offset(240));
  EXPECT_EQ(log->flushed_offset(), Offset(240));
  EXPECT_FALSE(log->recovery_report().indexes_rebuilt);
  EXPECT_EQ(log->recovery_report().truncated_at, Offset(-1));
  auto recs = testing::ReadAll(*log);
  ASSERT_EQ(recs.size(), values.size());
  for (size_t i = 0; i < recs.size(); ++i) EXPECT_EQ(*recs[i].value, values[i]);
  std::string b = MakeBatch(2, 10, 5000);
  EXPECT_EQ(log->Append(Bytes(b))->base_offset, Offset(240));
  EXPECT_EQ(testing::ReadAll(*log, Offset(238)).size(), 4u);
}

TEST(Log, FlushPolicies) {
  TempDir dir;
  LogConfig c = testing::SmallConfig();
  auto log = OpenLog(dir.path(), c);
  std::string b = MakeBatch(3, 10, 1);
  ASSERT_TRUE(log->Append(Bytes(b)).ok());
  EXPECT_EQ(log->flushed_offset(), Offset(0));  // -1/-1: explicit Flush only
  ASSERT_TRUE(log->MaybeFlush().ok());
  EXPECT_EQ(log->flushed_offset(), Offset(0));
  ASSERT_TRUE(log->Flush().ok());
  EXPECT_EQ(log->flushed_offset(), Offset(3));
  c.flush_interval_messages = 5;
  log->SetConfig(c);
  ASSERT_TRUE(log->Append(Bytes(b)).ok());
  EXPECT_EQ(log->flushed_offset(), Offset(3));
  ASSERT_TRUE(log->Append(Bytes(b)).ok());  // 6 unflushed >= 5
  EXPECT_EQ(log->flushed_offset(), Offset(9));
  c.flush_interval_messages = 0;
  log->SetConfig(c);
  ASSERT_TRUE(log->Append(Bytes(b)).ok());
  EXPECT_EQ(log->flushed_offset(), Offset(12));
  c.flush_interval_messages = -1;
  c.flush_interval_ms = 0;
  log->SetConfig(c);
  ASSERT_TRUE(log->Append(Bytes(b)).ok());
  EXPECT_EQ(log->flushed_offset(), Offset(15));
}

TEST(Log, MaybeRollBySegmentAge) {
  TempDir dir;
  LogConfig c = testing::SmallConfig();
  c.segment_ms = 1000;
  auto log = OpenLog(dir.path(), c);
  int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::system_clock::now().time_since_epoch()).count();
  ASSERT_TRUE(log->MaybeRoll(TimestampMs(now + 5000)).ok());
  EXPECT_EQ(log->segment_count(), 1);  // empty segments never roll
  std::string b = MakeBatch(1, 10, 1);
  ASSERT_TRUE(log->Append(Bytes(b)).ok());
  ASSERT_TRUE(log->MaybeRoll(TimestampMs(now + 10)).ok());
  EXPECT_EQ(log->segment_count(), 1);
  ASSERT_TRUE(log->MaybeRoll(TimestampMs(now + 5000)).ok());
  EXPECT_EQ(log->segment_count(), 2);
  EXPECT_EQ(testing::FileSize(dir.sub(filename::SegmentFileName(Offset(1), filename::FileKind::kLog))), 0);
}

}  // namespace
}  // namespace headrace
