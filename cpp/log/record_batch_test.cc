#include "headrace/record_batch.h"

#include <gtest/gtest.h>

#include "common/crc32c.h"
#include "log/coding.h"
#include "log/record_batch_internal.h"
#include "log/testing.h"

namespace headrace {
namespace {

using testing::Bytes;

std::span<const uint8_t> CBytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

void FixCrc(std::string& b) {
  auto* p = reinterpret_cast<uint8_t*>(b.data());
  coding::StoreBE32(p + batch::kCrcPos, batch::ComputeCrc({p, b.size()}));
}

TEST(Varint, ZigZagEncodingsMatchTheSpec) {
  std::string s;
  for (int64_t v : {0, -1, 1, -64, 64}) coding::AppendVarint(&s, v);
  EXPECT_EQ(s, std::string("\x00\x01\x02\x7f\x80\x01", 6));
  const uint8_t* p = reinterpret_cast<const uint8_t*>(s.data());
  const uint8_t* end = p + s.size();
  for (int64_t want : {0, -1, 1, -64, 64}) {
    int64_t got;
    ASSERT_TRUE(coding::ReadVarint64(&p, end, &got));
    EXPECT_EQ(got, want);
  }
  const uint8_t too_long[6] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
  const uint8_t* q = too_long;
  int32_t v32;
  EXPECT_FALSE(coding::ReadVarint32(&q, too_long + 6, &v32));
}

TEST(RecordBatch, HeaderFieldsSitWhereKafkaPutsThem) {
  std::string b = testing::MakeBatch(3, 10, 1000);
  auto* p = reinterpret_cast<const uint8_t*>(b.data());
  EXPECT_EQ(coding::LoadBE64(p), 0u);                                    // base offset
  EXPECT_EQ(coding::LoadBE32(p + 8), b.size() - 12);                     // batch length
  EXPECT_EQ(static_cast<int32_t>(coding::LoadBE32(p + 12)), -1);         // leader epoch
  EXPECT_EQ(p[16], 2);                                                   // magic
  EXPECT_EQ(coding::LoadBE32(p + 17), crc32c::Value(p + 21, b.size() - 21));
  EXPECT_EQ(coding::LoadBE32(p + 23), 2u);                               // last offset delta
  EXPECT_EQ(coding::LoadBE64(p + 27), 1000u);                            // base timestamp
  EXPECT_EQ(coding::LoadBE64(p + 35), 1002u);                            // max timestamp
  EXPECT_EQ(static_cast<int64_t>(coding::LoadBE64(p + 43)), -1);         // producer id
  EXPECT_EQ(coding::LoadBE32(p + 57), 3u);                               // record count
  auto h = ValidateBatch(CBytes(b));
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->record_count, 3);
  EXPECT_EQ(h->total_size(), static_cast<int64_t>(b.size()));
}

TEST(RecordBatch, RoundTripKeysNullKeysHeadersEmptyAndHugeValues) {
  std::vector<RecordInput> in(5);
  in[0].key = "key";
  in[0].value = "value";
  in[0].headers = {{"h1", "v1"}, {"h2", std::nullopt}, {"", ""}};
  in[1].value = "";  // null key, empty value
  in[2].key = "";
  in[2].value = std::nullopt;  // tombstone
  in[3].key = "big";
  in[3].value = std::string(3 << 20, 'x');
  in[4].key = "neg";
  in[4].value = "ts";
  for (int i = 0; i < 5; ++i) in[i].timestamp = TimestampMs(5000 - i * 10);
  std::string b = BuildBatch(in);
  auto recs = DecodeRecords(CBytes(b));
  ASSERT_TRUE(recs.ok()) << recs.status().ToString();
  ASSERT_EQ(recs->size(), 5u);
  for (int i = 0; i < 5; ++i) {
    const Record& r = (*recs)[i];
    EXPECT_EQ(r.offset, Offset(i));
    EXPECT_EQ(r.timestamp, TimestampMs(5000 - i * 10));
    EXPECT_EQ(r.key, in[i].key);
    EXPECT_EQ(r.value, in[i].value);
    ASSERT_EQ(r.headers.size(), in[i].headers.size());
    for (size_t h = 0; h < r.headers.size(); ++h) {
      EXPECT_EQ(r.headers[h].key, in[i].headers[h].key);
      EXPECT_EQ(r.headers[h].value, in[i].headers[h].value);
    }
  }
  auto info = batch::ValidateBatchInfo(CBytes(b));
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->max_timestamp, TimestampMs(5000));
  EXPECT_EQ(info->max_timestamp_delta, 0);
}

// The validation walk (fused with the CRC pass) must accept exactly what the
// descriptive record walk accepts: for every byte of the records section
// changed (CRC fixed up), either both accept (DecodeRecords then yields
// every record at offset = its index) or the refusal names the record fault.
void ExpectWalksAgree(const std::string& good, size_t from, size_t to) {
  int32_t count = static_cast<int32_t>(
      coding::LoadBE32(reinterpret_cast<const uint8_t*>(good.data()) + batch::kRecordCountPos));
  for (size_t pos = from; pos < to && pos < good.size(); ++pos)
    for (uint8_t x : {0x01, 0x80, 0xff}) {
      std::string m = good;
      m[pos] = static_cast<char>(m[pos] ^ x);
      FixCrc(m);
      auto v = ValidateBatch(CBytes(m));
      auto d = DecodeRecords(CBytes(m));
      if (v.ok()) {
        ASSERT_TRUE(d.ok()) << "byte " << pos << " ^ " << int{x} << ": " << d.status().ToString();
        ASSERT_EQ(d->size(), static_cast<size_t>(count)) << "byte " << pos;
        for (int32_t i = 0; i < count; ++i)  // offset delta == index was checked
          ASSERT_EQ((*d)[i].offset, Offset(i)) << "byte " << pos << " record " << i;
      } else {
        ASSERT_FALSE(d.ok()) << "byte " << pos << " ^ " << int{x};
        ASSERT_NE(v.status().message(), "bad records") << "byte " << pos;
      }
    }
}

TEST(RecordBatch, ValidationWalkAgreesWithTheRecordDecoderOnEveryChangedByte) {
  std::vector<RecordInput> in(40);
  for (int i = 0; i < 40; ++i) {
    if (i % 3 != 0) in[i].key = std::string(i % 5, 'k');
    in[i].value = std::string(i % 7 == 0 ? 70 : 3, 'v');
    if (i % 4 == 1) in[i].headers = {{"h", "x"}, {"", std::nullopt}};
    in[i].timestamp = TimestampMs(1000 + (i * 37) % 90);
  }
  std::string b = BuildBatch(in);
  ExpectWalksAgree(b, kBatchHeaderSize, b.size());
}

TEST(RecordBatch, ValidationWalkAcrossCrcChunksFindsTheMaxTimestampAndFaults) {
  std::vector<RecordInput> in(300);  // ~100 KiB: several 32 KiB CRC chunks
  for (int i = 0; i < 300; ++i) {
    in[i].value = std::string(300 + i, static_cast<char>('a' + i % 26));
    in[i].timestamp = TimestampMs(i == 217 ? 9000 : 1000 + i);
  }
  std::string b = BuildBatch(in);
  auto info = batch::ValidateBatchInfo(CBytes(b));
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->max_timestamp, TimestampMs(9000));
  EXPECT_EQ(info->max_timestamp_delta, 217);
  ExpectWalksAgree(b, 32 * 1024 - 400, 32 * 1024 + 400);
  ExpectWalksAgree(b, b.size() - 400, b.size());
}

TEST(RecordBatch, TrailingBytesInsideARecordAreCorruption) {
  std::vector<RecordInput> in(2);
  in[0].value = "ab";  // body: attrs, ts, delta, key -1, len 2, "ab", 0 headers = 8 bytes
  in[1].value = "cd";
  std::string b = BuildBatch(in);
  ASSERT_EQ(static_cast<uint8_t>(b[kBatchHeaderSize]), 0x10);  // zigzag(8)
  b[kBatchHeaderSize] = 0x12;                                  // claims 9 bytes
  b.insert(b.begin() + kBatchHeaderSize + 1 + 8, '\x00');       // one junk byte
  auto* p = reinterpret_cast<uint8_t*>(b.data());
  coding::StoreBE32(p + batch::kLengthPos, coding::LoadBE32(p + batch::kLengthPos) + 1);
  FixCrc(b);
  auto v = ValidateBatch(CBytes(b));
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().message(), "record 0: record length does not match its fields");
}

TEST(RecordBatch, FlippedByteFailsTheCrc) {
  std::string b = testing::MakeBatch(4, 20, 1);
  b[b.size() - 5] ^= 0x40;
  auto h = ValidateBatch(CBytes(b));
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), StatusCode::kCorruption);
  EXPECT_NE(h.status().message().find("CRC mismatch"), std::string::npos);
}

TEST(RecordBatch, WrongMagicIsUnsupported) {
  std::string b = testing::MakeBatch(1, 1, 1);
  b[16] = 1;
  auto h = ParseBatchHeader(CBytes(b));
  EXPECT_EQ(h.status().code(), StatusCode::kUnsupported);
}

TEST(RecordBatch, LengthsThatLieAreCorruption) {
  std::string b = testing::MakeBatch(2, 8, 1);
  std::string longer = b;
  coding::StoreBE32(reinterpret_cast<uint8_t*>(longer.data()) + 8, b.size());  // 12 too many
  EXPECT_NE(ParseBatchHeader(CBytes(longer)).status().message().find("runs past"), std::string::npos);
  std::string shorter = b;
  coding::StoreBE32(reinterpret_cast<uint8_t*>(shorter.data()) + 8, 10);
  EXPECT_NE(ParseBatchHeader(CBytes(shorter)).status().message().find("below the header"),
            std::string::npos);
  EXPECT_EQ(ParseBatchHeader(CBytes(b).first(30)).status().code(), StatusCode::kCorruption);
}

TEST(RecordBatch, RecordCountMismatchIsCorruptionEvenWithAGoodCrc) {
  std::string b = testing::MakeBatch(3, 8, 1);
  auto* p = reinterpret_cast<uint8_t*>(b.data());
  coding::StoreBE32(p + batch::kRecordCountPos, 4);
  coding::StoreBE32(p + batch::kLastOffsetDeltaPos, 3);
  FixCrc(b);
  auto h = ValidateBatch(CBytes(b));
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("record count 4 but 3 records"), std::string::npos)
      << h.status().message();
  coding::StoreBE32(p + batch::kRecordCountPos, 3);
  FixCrc(b);
  EXPECT_NE(ValidateBatch(CBytes(b)).status().message().find("last offset delta"), std::string::npos);
}

TEST(RecordBatch, LogAppendTimeRewritesTimestampsAndKeepsTheCrcValid) {
  std::string b = testing::MakeBatch(3, 4, 100);
  SetBaseOffset(Bytes(b), Offset(77));
  SetLogAppendTime(Bytes(b), TimestampMs(999));
  auto h = ValidateBatch(CBytes(b));
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_TRUE(h->log_append_time());
  EXPECT_EQ(h->base_offset, Offset(77));
  auto recs = DecodeRecords(CBytes(b));
  ASSERT_TRUE(recs.ok());
  EXPECT_EQ((*recs)[2].offset, Offset(79));
  EXPECT_EQ((*recs)[2].timestamp, TimestampMs(999));
}

TEST(RecordBatch, DecodeIgnoresATrailingPartialBatchAndSkipsControlBatches) {
  std::string two = testing::MakeBatch(2, 3, 1) + testing::MakeBatch(2, 3, 1);
  auto recs = DecodeRecords(CBytes(two).first(two.size() - 7));
  ASSERT_TRUE(recs.ok());
  EXPECT_EQ(recs->size(), 2u);
  std::string control = testing::MakeBatch(1, 3, 1);
  auto* p = reinterpret_cast<uint8_t*>(control.data());
  coding::StoreBE16(p + batch::kAttributesPos, 0x20);
  FixCrc(control);
  recs = DecodeRecords(CBytes(control));
  ASSERT_TRUE(recs.ok());
  EXPECT_TRUE(recs->empty());
}

TEST(RecordBatch, CompressedBatchesValidateAndDecodeWithEveryCodec) {
  std::string plain = testing::MakeBatch(5, 300, 1000, /*null_keys=*/true);
  auto want = DecodeRecords(CBytes(plain));
  ASSERT_TRUE(want.ok());
  for (Compression c : {Compression::kGzip, Compression::kSnappy, Compression::kLz4,
                        Compression::kZstd}) {
    auto packed = ConvertCompression(CBytes(plain), c);
    ASSERT_TRUE(packed.ok()) << packed.status().ToString();
    EXPECT_LT(packed->size(), plain.size());
    auto h = ValidateBatch(CBytes(*packed));
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    EXPECT_EQ(h->compression(), c);
    EXPECT_EQ(h->record_count, 5);
    auto got = DecodeRecords(CBytes(*packed));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_EQ(got->size(), 5u);
    for (size_t i = 0; i < 5; ++i) {
      EXPECT_EQ((*got)[i].offset, (*want)[i].offset);
      EXPECT_EQ((*got)[i].timestamp, (*want)[i].timestamp);
      EXPECT_EQ((*got)[i].key, (*want)[i].key);
      EXPECT_EQ((*got)[i].value, (*want)[i].value);
    }
    auto back = ConvertCompression(CBytes(*packed), Compression::kNone);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, plain);  // same bytes, CRC included
  }
}

TEST(RecordBatch, CompressedPayloadThatDoesNotDecompressIsCorruptNotInvalidRecord) {
  std::string b = testing::MakeBatch(2, 3, 1);
  auto* p = reinterpret_cast<uint8_t*>(b.data());
  coding::StoreBE16(p + batch::kAttributesPos, static_cast<uint16_t>(Compression::kZstd));
  FixCrc(b);
  auto h = ValidateBatch(CBytes(b));
  EXPECT_EQ(h.status().code(), StatusCode::kCorruption);
  EXPECT_EQ(h.status().detail(), 0);
  EXPECT_NE(h.status().message().find("zstd"), std::string::npos) << h.status().message();
  EXPECT_EQ(DecodeRecords(CBytes(b)).status().code(), StatusCode::kCorruption);
  // Without a scratch buffer (recovery) only the header is checked.
  EXPECT_TRUE(batch::ValidateBatchInfo(CBytes(b)).ok());
  coding::StoreBE16(p + batch::kAttributesPos, 5);
  FixCrc(b);
  EXPECT_NE(ValidateBatch(CBytes(b)).status().message().find("codec 5"), std::string::npos);
}

// A compressed batch whose decompressed records disagree with its header.
std::string CompressedWithRecordCount(Compression c, int records, int32_t claimed) {
  std::string plain = testing::MakeBatch(records, 10, 1);
  auto* p = reinterpret_cast<uint8_t*>(plain.data());
  coding::StoreBE32(p + batch::kRecordCountPos, static_cast<uint32_t>(claimed));
  coding::StoreBE32(p + batch::kLastOffsetDeltaPos, static_cast<uint32_t>(claimed - 1));
  return ConvertCompression(CBytes(plain), c).value();
}

TEST(RecordBatch, RecordsInsideCompressedBatchesAreCheckedAsInvalidRecord) {
  for (Compression c : {Compression::kGzip, Compression::kSnappy, Compression::kLz4,
                        Compression::kZstd}) {
    for (int32_t claimed : {2, 4}) {  // fewer / more records than present
      std::string b = CompressedWithRecordCount(c, 3, claimed);
      auto h = ValidateBatch(CBytes(b));
      ASSERT_FALSE(h.ok());
      EXPECT_EQ(h.status().detail(), kInvalidRecordDetail) << h.status().ToString();
      EXPECT_NE(h.status().message().find("record count"), std::string::npos)
          << h.status().message();
    }
  }
  // Offset deltas other than 0..n-1: the second record claims delta 5.
  std::vector<RecordInput> in(3);
  for (auto& r : in) r.value = "v";
  std::string plain = BuildBatch(in);
  std::string records = plain.substr(kBatchHeaderSize);
  auto view = DecodeRecords(CBytes(plain));
  ASSERT_TRUE(view.ok());
  // Each record is: len, attrs, ts delta, offset delta, ... ; all one-byte varints here.
  size_t second = 1 + static_cast<uint8_t>(records[0]) / 2;  // zigzag length of record 0
  records[second + 3] = static_cast<char>(5 * 2);            // offset delta 5 (zigzag)
  std::string bad = plain.substr(0, kBatchHeaderSize) + records;
  FixCrc(bad);
  auto packed = ConvertCompression(CBytes(bad), Compression::kLz4);
  ASSERT_TRUE(packed.ok());
  auto h = ValidateBatch(CBytes(*packed));
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().detail(), kInvalidRecordDetail);
  EXPECT_NE(h.status().message().find("offset delta 5"), std::string::npos) << h.status().message();
}

TEST(RecordBatch, ValidateBatchInfoReportsMinAndMaxRecordTimestamps) {
  std::vector<RecordInput> in(4);
  int64_t ts[] = {50, 20, 90, 30};
  for (int i = 0; i < 4; ++i) {
    in[i].value = "v";
    in[i].timestamp = TimestampMs(ts[i]);
  }
  std::string plain = BuildBatch(in);
  std::string zstd = ConvertCompression(CBytes(plain), Compression::kZstd).value();
  std::string scratch;
  for (const std::string* b : {&plain, &zstd}) {
    auto info = batch::ValidateBatchInfo(CBytes(*b), &scratch);
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    std::span<const uint8_t> records =
        b == &plain ? CBytes(plain).subspan(kBatchHeaderSize) : CBytes(scratch);
    EXPECT_EQ(batch::MinRecordTimestamp(records, info->header).value(), TimestampMs(20));
    EXPECT_EQ(info->max_timestamp, TimestampMs(90));
    EXPECT_EQ(info->max_timestamp_delta, 2);
  }
}

TEST(RecordBatch, FirstRecordAtOrAfterFindsTheExactRecord) {
  std::vector<RecordInput> in(4);
  int64_t ts[] = {10, 30, 20, 40};
  for (int i = 0; i < 4; ++i) {
    in[i].value = "v";
    in[i].timestamp = TimestampMs(ts[i]);
  }
  std::string b = BuildBatch(in);
  for (Compression c : {Compression::kNone, Compression::kGzip, Compression::kSnappy,
                        Compression::kLz4, Compression::kZstd}) {
    std::string packed = ConvertCompression(CBytes(b), c).value();
    auto r = batch::FirstRecordAtOrAfter(CBytes(packed), TimestampMs(15), 0);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->delta, 1);
    EXPECT_EQ(r->timestamp, TimestampMs(30));
    r = batch::FirstRecordAtOrAfter(CBytes(packed), TimestampMs(15), 2);
    EXPECT_EQ(r->delta, 2);
    EXPECT_EQ(r->timestamp, TimestampMs(20));
    EXPECT_EQ(batch::FirstRecordAtOrAfter(CBytes(packed), TimestampMs(41), 0)->delta, -1);
  }
}

}  // namespace
}  // namespace headrace
