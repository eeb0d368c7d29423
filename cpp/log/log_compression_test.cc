// The log's handling of compressed batches (validation of their records,
// compression.type re-encoding, exact offset-for-time inside them) and the
// timestamp bounds of leader appends.
#include <gtest/gtest.h>

#include "headrace/log.h"
#include "log/coding.h"
#include "log/compression.h"
#include "log/log_impl.h"
#include "log/record_batch_internal.h"
#include "log/testing.h"

namespace headrace {
namespace {

using testing::Bytes;
using testing::MakeBatch;
using testing::TempDir;

constexpr Compression kCodecs[] = {Compression::kGzip, Compression::kSnappy, Compression::kLz4,
                                   Compression::kZstd};

std::span<const uint8_t> CBytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::unique_ptr<Log> OpenLog(const std::string& dir, const LogConfig& c = testing::SmallConfig()) {
  auto log = Log::Open(dir, c);
  EXPECT_TRUE(log.ok()) << log.status().ToString();
  return log.ok() ? std::move(log).value() : nullptr;
}

std::string Packed(const std::string& plain, Compression c) {
  return ConvertCompression(CBytes(plain), c).value();
}

// The codec of every stored batch, in order.
std::vector<Compression> StoredCodecs(const Log& log) {
  auto r = log.Read(log.start_offset(), 1 << 30, log.end_offset());
  std::string bytes = testing::SliceBytes(r.value());
  std::vector<Compression> out;
  for (size_t pos = 0; pos < bytes.size();) {
    BatchHeader h = batch::DecodeHeader(reinterpret_cast<const uint8_t*>(bytes.data()) + pos);
    out.push_back(h.compression());
    pos += h.total_size();
  }
  return out;
}

TEST(LogCompression, CompressedBatchesAreStoredAsSentAndReadBackExactly) {
  TempDir dir;
  auto log = OpenLog(dir.path());
  std::string input;
  for (Compression c : kCodecs) input += Packed(MakeBatch(4, 50, 1000), c);
  auto info = log->Append(Bytes(input));
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->record_count, 16);
  EXPECT_EQ(info->last_offset, Offset(15));
  EXPECT_EQ(StoredCodecs(*log), std::vector<Compression>(std::begin(kCodecs), std::end(kCodecs)));
  auto recs = testing::ReadAll(*log);
  ASSERT_EQ(recs.size(), 16u);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(recs[i].offset, Offset(i));
    EXPECT_EQ(recs[i].timestamp, TimestampMs(1000 + i % 4));
    EXPECT_EQ(recs[i].key, "k" + std::to_string(i % 4));
  }
}

TEST(LogCompression, ABadCompressedBatchAppendsNothing) {
  TempDir dir;
  auto log = OpenLog(dir.path());
  std::string first = Packed(MakeBatch(2, 5, 1), Compression::kLz4);
  ASSERT_TRUE(log->Append(Bytes(first)).ok());
  // Payload that is not zstd (valid CRC): CORRUPT_MESSAGE, no detail.
  std::string fake = MakeBatch(3, 5, 1);
  auto* p = reinterpret_cast<uint8_t*>(fake.data());
  coding::StoreBE16(p + batch::kAttributesPos, static_cast<uint16_t>(Compression::kZstd));
  coding::StoreBE32(p + batch::kCrcPos, batch::ComputeCrc(CBytes(fake)));
  std::string good = MakeBatch(1, 5, 1);
  std::string input = good + fake;
  auto r = log->Append(Bytes(input));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
  EXPECT_EQ(r.status().detail(), 0);
  // A record count that disagrees with the compressed records: INVALID_RECORD.
  std::string plain = MakeBatch(3, 5, 1);
  p = reinterpret_cast<uint8_t*>(plain.data());
  coding::StoreBE32(p + batch::kRecordCountPos, 4);
  coding::StoreBE32(p + batch::kLastOffsetDeltaPos, 3);
  std::string lying = Packed(plain, Compression::kGzip);
  r = log->Append(Bytes(lying));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().detail(), kInvalidRecordDetail) << r.status().ToString();
  EXPECT_EQ(log->end_offset(), Offset(2));  // neither append wrote anything
  EXPECT_EQ(testing::ReadAll(*log).size(), 2u);
}

TEST(LogCompression, CompressionTypeReEncodesOtherCodecsAndKeepsTheInputsOffsets) {
  for (std::optional<Compression> target :
       {std::optional<Compression>(Compression::kZstd), std::optional<Compression>(Compression::kNone)}) {
    TempDir dir;
    LogConfig c = testing::SmallConfig();
    c.compression_target = target;
    auto log = OpenLog(dir.path(), c);
    std::string input = MakeBatch(3, 40, 100) + Packed(MakeBatch(2, 40, 200), Compression::kGzip) +
                        Packed(MakeBatch(2, 40, 300), Compression::kZstd);
    auto info = log->Append(Bytes(input));
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    EXPECT_EQ(info->last_offset, Offset(6));
    EXPECT_EQ(StoredCodecs(*log), std::vector<Compression>(3, *target));
    // The caller's batches say where they went (producer state reads them).
    std::vector<int64_t> bases;
    for (size_t pos = 0; pos < input.size();) {
      BatchHeader h = batch::DecodeHeader(reinterpret_cast<const uint8_t*>(input.data()) + pos);
      bases.push_back(h.base_offset.value());
      pos += h.total_size();
    }
    EXPECT_EQ(bases, (std::vector<int64_t>{0, 3, 5}));
    auto recs = testing::ReadAll(*log);
    ASSERT_EQ(recs.size(), 7u);
    EXPECT_EQ(recs[3].timestamp, TimestampMs(200));
    EXPECT_EQ(recs[6].timestamp, TimestampMs(301));
    EXPECT_EQ(*recs[6].value, std::string(40, 'b'));
  }
}

TEST(LogCompression, ABatchThatGrowsAboveMaxMessageBytesWhenReEncodedIsRefused) {
  TempDir dir;
  LogConfig c = testing::SmallConfig();
  c.compression_target = Compression::kNone;
  std::string packed = Packed(MakeBatch(20, 200, 1), Compression::kZstd);
  c.max_message_bytes = static_cast<int32_t>(packed.size()) + 10;  // fits only compressed
  auto log = OpenLog(dir.path(), c);
  auto r = log->Append(Bytes(packed));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kTooLarge);
  EXPECT_NE(r.status().message().find("re-encoded as none"), std::string::npos) << r.status().message();
  EXPECT_EQ(log->end_offset(), Offset(0));
}

TEST(LogCompression, OffsetForTimeFindsTheExactRecordInsideCompressedBatches) {
  for (Compression c : kCodecs) {
    TempDir dir;
    auto log = OpenLog(dir.path());
    // 20 batches of 10 records, timestamps 1000 + 10 * offset.
    for (int b = 0; b < 20; ++b) {
      std::vector<RecordInput> in(10);
      for (int i = 0; i < 10; ++i) {
        in[i].value = "v" + std::to_string(i);
        in[i].timestamp = TimestampMs(1000 + 10 * (b * 10 + i));
      }
      std::string packed = Packed(BuildBatch(in), c);
      ASSERT_TRUE(log->Append(Bytes(packed)).ok());
    }
    for (int64_t want : {0, 7, 55, 199}) {
      auto r = log->OffsetForTime(TimestampMs(1000 + 10 * want - 3));
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(r->first, Offset(want)) << compression::CodecName(c);
      EXPECT_EQ(r->second, TimestampMs(1000 + 10 * want));
    }
    EXPECT_EQ(log->OffsetForTime(TimestampMs(1000 + 2000)).status().code(), StatusCode::kNotFound);
    auto max = log->MaxTimestamp();
    ASSERT_TRUE(max.ok());
    EXPECT_EQ(max->first, TimestampMs(1000 + 1990));
    EXPECT_EQ(max->second, Offset(199));
  }
}

TEST(LogCompression, TimestampBoundsRefuseOldAndFutureRecordsWithInvalidTimestamp) {
  TempDir dir;
  LogConfig c = testing::SmallConfig();
  c.timestamp_before_max_ms = 60'000;
  c.timestamp_after_max_ms = 1'000;
  auto log = OpenLog(dir.path(), c);
  const int64_t now = WallClockMs();
  for (Compression codec : {Compression::kNone, Compression::kZstd}) {
    std::string old = MakeBatch(2, 5, now - 3'600'000);
    std::string future = MakeBatch(2, 5, now + 3'600'000);
    std::string fine = MakeBatch(2, 5, now - 30'000);
    for (std::string* b : {&old, &future, &fine})
      if (codec != Compression::kNone) *b = Packed(*b, codec);
    auto r = log->Append(Bytes(old));
    EXPECT_EQ(r.status().detail(), kInvalidTimestampDetail) << r.status().ToString();
    r = log->Append(Bytes(future));
    EXPECT_EQ(r.status().detail(), kInvalidTimestampDetail) << r.status().ToString();
    EXPECT_TRUE(log->Append(Bytes(fine)).ok());
  }
  EXPECT_EQ(log->end_offset(), Offset(4));
  // The legacy difference bound covers a side left at its default.
  c = testing::SmallConfig();
  c.timestamp_difference_max_ms = 1'000;
  log->SetConfig(c);
  std::string old = MakeBatch(1, 5, now - 60'000);
  EXPECT_EQ(log->Append(Bytes(old)).status().detail(), kInvalidTimestampDetail);
  // LogAppendTime logs do not check producer timestamps.
  c.timestamp_type = TimestampType::kLogAppendTime;
  log->SetConfig(c);
  auto r = log->Append(Bytes(old));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_GE(r->log_append_time.value(), now);
}

TEST(LogCompression, LogAppendTimeSetsOnlyTheHeaderOfCompressedBatches) {
  TempDir dir;
  LogConfig c = testing::SmallConfig();
  c.timestamp_type = TimestampType::kLogAppendTime;
  auto log = OpenLog(dir.path(), c);
  std::string packed = Packed(MakeBatch(3, 5, 1000), Compression::kLz4);
  std::string payload = packed.substr(kBatchHeaderSize);
  auto info = log->Append(Bytes(packed));
  ASSERT_TRUE(info.ok());
  auto read = log->Read(Offset(0), 1 << 20, log->end_offset());
  std::string stored = testing::SliceBytes(read.value());
  EXPECT_EQ(stored.substr(kBatchHeaderSize), payload);  // records untouched
  auto h = ValidateBatch(CBytes(stored));
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_TRUE(h->log_append_time());
  EXPECT_EQ(h->max_timestamp, info->log_append_time);
  for (const Record& r : testing::ReadAll(*log)) EXPECT_EQ(r.timestamp, info->log_append_time);
  // A producer may not set the LogAppendTime bit itself (Kafka: INVALID_TIMESTAMP).
  std::string again = stored;
  EXPECT_EQ(log->Append(Bytes(again)).status().detail(), kInvalidTimestampDetail);
  auto t = log->OffsetForTime(TimestampMs(0));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->first, Offset(0));
  EXPECT_EQ(t->second, info->log_append_time);
}

}  // namespace
}  // namespace headrace
