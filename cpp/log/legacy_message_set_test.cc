#include "log/legacy_message_set.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "headrace/record_batch.h"
#include "log/compression.h"
#include "log/testing.h"

namespace headrace {
namespace {

std::span<const uint8_t> Bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::string Entry(int8_t magic, int64_t offset, std::optional<std::string> key,
                  std::optional<std::string> value, int8_t attributes = 0, int64_t ts = 0) {
  return testing::LegacyEntry(magic, offset, std::move(key), std::move(value), attributes, ts);
}

// A wrapper entry holding `inner` compressed with `codec`.
std::string Wrapper(int8_t magic, Compression codec, const std::string& inner, int64_t ts = 0,
                    bool log_append_time = false) {
  std::string compressed;
  EXPECT_TRUE(compression::Compress(codec, Bytes(inner), &compressed).ok());
  const auto attributes = static_cast<int8_t>(static_cast<int>(codec) | (log_append_time ? 8 : 0));
  return Entry(magic, 2, std::nullopt, compressed, attributes, ts);
}

std::vector<Record> Decode(const std::string& batch) {
  auto records = DecodeRecords(Bytes(batch));
  EXPECT_TRUE(records.ok()) << records.status().ToString();
  return records.ok() ? *records : std::vector<Record>{};
}

TEST(LegacyMessageSetTest, RecognisesFormatsV0AndV1ButNotRecordBatches) {
  EXPECT_TRUE(IsLegacyMessageSet(Bytes(Entry(0, 0, "k", "v"))));
  EXPECT_TRUE(IsLegacyMessageSet(Bytes(Entry(1, 0, "k", "v"))));
  EXPECT_FALSE(IsLegacyMessageSet(Bytes(BuildBatch({{"k", "v", {}, TimestampMs{5}}}))));
  EXPECT_FALSE(IsLegacyMessageSet(Bytes(std::string(10, '\0'))));
}

TEST(LegacyMessageSetTest, V0MessagesBecomeOneBatchWithoutTimestamps) {
  std::string set = Entry(0, 0, "k0", "v0") + Entry(0, 1, std::nullopt, "v1") +
                    Entry(0, 2, "k2", std::nullopt);
  auto batch = ConvertLegacyMessageSet(Bytes(set));
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  auto h = ValidateBatch(Bytes(*batch));
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->magic, 2);
  EXPECT_EQ(h->record_count, 3);
  EXPECT_EQ(h->compression(), Compression::kNone);
  EXPECT_EQ(h->producer_id, -1);
  EXPECT_EQ(h->max_timestamp, kNoTimestamp);
  auto records = Decode(*batch);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].key, "k0");
  EXPECT_EQ(records[0].value, "v0");
  EXPECT_EQ(records[1].key, std::nullopt);
  EXPECT_EQ(records[2].value, std::nullopt);
  for (const Record& r : records) EXPECT_EQ(r.timestamp, kNoTimestamp);
  EXPECT_EQ(records[2].offset.value(), 2);
}

TEST(LegacyMessageSetTest, V1MessagesKeepTheirTimestamps) {
  std::string set = Entry(1, 0, "a", "1", 0, 1000) + Entry(1, 1, "b", "2", 0, 1500);
  auto batch = ConvertLegacyMessageSet(Bytes(set));
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  auto records = Decode(*batch);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].timestamp.value(), 1000);
  EXPECT_EQ(records[1].timestamp.value(), 1500);
  EXPECT_EQ(ValidateBatch(Bytes(*batch))->max_timestamp.value(), 1500);
}

TEST(LegacyMessageSetTest, WrappersAreUnpackedAndTheirCodecKept) {
  for (Compression codec : {Compression::kGzip, Compression::kSnappy, Compression::kLz4}) {
    SCOPED_TRACE(compression::CodecName(codec));
    std::string inner = Entry(1, 0, "a", "x", 0, 10) + Entry(1, 1, "b", "y", 0, 20) +
                        Entry(1, 2, "c", "z", 0, 30);
    auto batch = ConvertLegacyMessageSet(Bytes(Wrapper(1, codec, inner, 30)));
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    auto h = ValidateBatch(Bytes(*batch));
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    EXPECT_EQ(h->compression(), codec);
    EXPECT_EQ(h->record_count, 3);
    auto records = Decode(*batch);
    ASSERT_EQ(records.size(), 3u);
    EXPECT_EQ(records[1].key, "b");
    EXPECT_EQ(records[2].value, "z");
    EXPECT_EQ(records[0].timestamp.value(), 10);
  }
}

TEST(LegacyMessageSetTest, AV0GzipWrapperAndALogAppendTimeWrapper) {
  std::string v0inner = Entry(0, 0, "a", "x") + Entry(0, 1, "b", "y");
  auto v0 = ConvertLegacyMessageSet(Bytes(Wrapper(0, Compression::kGzip, v0inner)));
  ASSERT_TRUE(v0.ok()) << v0.status().ToString();
  for (const Record& r : Decode(*v0)) EXPECT_EQ(r.timestamp, kNoTimestamp);

  std::string v1inner = Entry(1, 0, "a", "x", 0, 10) + Entry(1, 1, "b", "y", 0, 20);
  auto lat = ConvertLegacyMessageSet(
      Bytes(Wrapper(1, Compression::kGzip, v1inner, 777, /*log_append_time=*/true)));
  ASSERT_TRUE(lat.ok()) << lat.status().ToString();
  for (const Record& r : Decode(*lat)) EXPECT_EQ(r.timestamp.value(), 777);
}

// Format v0 producers write LZ4 frames whose descriptor checksum is wrong
// (Kafka's old framing bug); those are read, a v1 frame with a bad checksum
// is not.
TEST(LegacyMessageSetTest, V0Lz4FramesWithTheOldHeaderChecksumAreRead) {
  std::string inner = Entry(0, 0, "a", "x") + Entry(0, 1, "b", "y");
  std::string frame;
  ASSERT_TRUE(compression::Compress(Compression::kLz4, Bytes(inner), &frame).ok());
  const uint8_t flg = static_cast<uint8_t>(frame[4]);
  const size_t hc = 4 + 2 + ((flg & 0x08) ? 8 : 0) + ((flg & 0x01) ? 4 : 0);
  frame[hc] = static_cast<char>(frame[hc] ^ 0x5a);
  auto v0 = ConvertLegacyMessageSet(Bytes(Entry(0, 1, std::nullopt, frame, 3)));
  ASSERT_TRUE(v0.ok()) << v0.status().ToString();
  EXPECT_EQ(Decode(*v0).size(), 2u);
  auto v1 = ConvertLegacyMessageSet(Bytes(Entry(1, 1, std::nullopt, frame, 3, 5)));
  EXPECT_FALSE(v1.ok());
}

TEST(LegacyMessageSetTest, TimestampsBelowMinusOneOrTooFarApartAreInvalid) {
  for (const std::string& set :
       {Entry(1, 0, "k", "v", 0, -5),
        Entry(1, 0, "k", "v", 0, INT64_MIN + 2000) + Entry(1, 1, "k", "v", 0, 1),
        Entry(0, 0, "k", "v") + Entry(1, 1, "k", "v", 0, INT64_MAX)}) {
    auto r = ConvertLegacyMessageSet(Bytes(set));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().detail(), kInvalidTimestampDetail) << r.status().ToString();
  }
  auto far = ConvertLegacyMessageSet(
      Bytes(Entry(1, 0, "k", "v", 0, 0) + Entry(1, 1, "k", "v", 0, INT64_MAX)));
  EXPECT_TRUE(far.ok()) << far.status().ToString();  // 0 .. INT64_MAX fits
}

TEST(LegacyMessageSetTest, ATrailingPartialEntryIsIgnored) {
  std::string whole = Entry(0, 0, "k", "v");
  std::string next = Entry(0, 1, "k2", "v2");
  auto batch = ConvertLegacyMessageSet(Bytes(whole + next.substr(0, next.size() - 3)));
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  EXPECT_EQ(Decode(*batch).size(), 1u);
}

TEST(LegacyMessageSetTest, BadSetsAreInvalidRecords) {
  std::string bad_crc = Entry(0, 0, "k", "v");
  bad_crc.back() ^= 1;
  std::string inner = Entry(1, 0, "a", "x", 0, 1);
  std::string nested = Wrapper(1, Compression::kGzip, Wrapper(1, Compression::kGzip, inner));
  std::string bad_magic = Entry(0, 0, "k", "v");
  bad_magic[16] = 2;
  std::string not_gzip = Entry(1, 0, std::nullopt, "not gzip at all", 1, 0);
  std::string zstd = Entry(1, 0, std::nullopt, "x", 4, 0);
  std::string empty_wrapper = Wrapper(1, Compression::kGzip, "");
  for (const std::string& set :
       {bad_crc, nested, std::string(), Entry(0, 0, "k", "v").substr(0, 20), not_gzip, zstd,
        empty_wrapper}) {
    auto r = ConvertLegacyMessageSet(Bytes(set));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kCorruption) << r.status().ToString();
    EXPECT_EQ(r.status().detail(), kInvalidRecordDetail) << r.status().ToString();
  }
  // Magic 2 in a v0/v1 position is not a message of these formats.
  EXPECT_FALSE(ConvertLegacyMessageSet(Bytes(bad_magic)).ok());
}

}  // namespace
}  // namespace headrace
