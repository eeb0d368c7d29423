// RecordColumns: batches of every codec into Arrow columns, offset ranges,
// control batches, aborted transactions under read_committed, a truncated
// tail, and corrupt input refused with a Corruption status.
#include "headrace/record_columns.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "headrace/record_batch.h"
#include "log/coding.h"
#include "log/record_batch_internal.h"

namespace headrace {
namespace {

std::span<uint8_t> Bytes(std::string& s) {
  return {reinterpret_cast<uint8_t*>(s.data()), s.size()};
}
std::span<const uint8_t> CBytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// A batch of `n` records at `base`: key "k<i>" (none for odd i), value
// "v<i>", header ("h", "x<i>") on every third, timestamp 1000 + i.
std::string Batch(int64_t base, int n, Compression codec = Compression::kNone,
                  BatchProducerFields producer = {}) {
  std::vector<RecordInput> in;
  for (int i = 0; i < n; ++i) {
    RecordInput r;
    if (i % 2 == 0) r.key = "k" + std::to_string(base + i);
    r.value = "v" + std::to_string(base + i);
    if (i % 3 == 0) r.headers.push_back({"h", "x" + std::to_string(base + i)});
    r.timestamp = TimestampMs(1000 + base + i);
    in.push_back(r);
  }
  std::string b = BuildBatch(in, producer);
  if (codec != Compression::kNone) b = ConvertCompression(CBytes(b), codec).value();
  SetBaseOffset(Bytes(b), Offset(base));
  return b;
}

// The exported columns, read back from the C data interface buffers.
struct Rows {
  std::vector<std::optional<std::string>> keys, values;
  std::vector<int64_t> offsets, ts_us;
  std::vector<int32_t> partitions, ts_types;
  std::vector<std::string> topics;
  std::vector<std::vector<std::pair<std::string, std::string>>> headers;
};

std::optional<std::string> Var(const ArrowArray* a, int64_t i) {
  auto* bits = static_cast<const uint8_t*>(a->buffers[0]);
  if (bits && !(bits[i / 8] & (1 << (i % 8)))) return std::nullopt;
  auto* off = static_cast<const int32_t*>(a->buffers[1]);
  auto* data = static_cast<const char*>(a->buffers[2]);
  return std::string(data + off[i], off[i + 1] - off[i]);
}

Rows Read(RecordColumns& cols, bool headers) {
  ArrowArray a;
  cols.Export(&a);
  Rows r;
  EXPECT_EQ(a.n_children, headers ? 8 : 7);
  for (int64_t i = 0; i < a.length; ++i) {
    r.keys.push_back(Var(a.children[0], i));
    r.values.push_back(Var(a.children[1], i));
    r.topics.push_back(*Var(a.children[2], i));
    r.partitions.push_back(static_cast<const int32_t*>(a.children[3]->buffers[1])[i]);
    r.offsets.push_back(static_cast<const int64_t*>(a.children[4]->buffers[1])[i]);
    r.ts_us.push_back(static_cast<const int64_t*>(a.children[5]->buffers[1])[i]);
    r.ts_types.push_back(static_cast<const int32_t*>(a.children[6]->buffers[1])[i]);
    if (headers) {
      const ArrowArray* list = a.children[7];
      auto* lo = static_cast<const int32_t*>(list->buffers[1]);
      const ArrowArray* entry = list->children[0];
      std::vector<std::pair<std::string, std::string>> hs;
      for (int32_t e = lo[i]; e < lo[i + 1]; ++e)
        hs.emplace_back(*Var(entry->children[0], e), Var(entry->children[1], e).value_or("<null>"));
      r.headers.push_back(hs);
    }
  }
  a.release(&a);
  EXPECT_EQ(a.release, nullptr);
  return r;
}

class EveryCodec : public testing::TestWithParam<Compression> {};

TEST_P(EveryCodec, DecodesEveryColumn) {
  std::string bytes = Batch(10, 5, GetParam()) + Batch(15, 4, GetParam());
  RecordColumns cols("clicks", 3, true);
  auto res = cols.Append(CBytes(bytes), 10, 100, false, {});
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_EQ(res->next_offset, 19);
  EXPECT_EQ(res->rows, 9);
  Rows r = Read(cols, true);
  ASSERT_EQ(r.offsets.size(), 9u);
  for (int i = 0; i < 9; ++i) {
    int64_t off = 10 + i;
    int in_batch = i < 5 ? i : i - 5;
    EXPECT_EQ(r.offsets[i], off);
    EXPECT_EQ(r.values[i], "v" + std::to_string(off));
    EXPECT_EQ(r.keys[i], in_batch % 2 == 0 ? std::optional<std::string>("k" + std::to_string(off))
                                           : std::nullopt);
    EXPECT_EQ(r.topics[i], "clicks");
    EXPECT_EQ(r.partitions[i], 3);
    EXPECT_EQ(r.ts_us[i], (1000 + off) * 1000);
    EXPECT_EQ(r.ts_types[i], 0);
    EXPECT_EQ(r.headers[i].size(), in_batch % 3 == 0 ? 1u : 0u);
    if (in_batch % 3 == 0) {
      EXPECT_EQ(r.headers[i][0].second, "x" + std::to_string(off));
    }
  }
  EXPECT_EQ(cols.num_rows(), 0);  // the export emptied it
}

INSTANTIATE_TEST_SUITE_P(Codecs, EveryCodec,
                         testing::Values(Compression::kNone, Compression::kGzip,
                                         Compression::kSnappy, Compression::kLz4,
                                         Compression::kZstd));

TEST(RecordColumns, KeepsOnlyTheRange) {
  std::string bytes = Batch(0, 10) + Batch(10, 10);
  RecordColumns cols("t", 0, false);
  auto res = cols.Append(CBytes(bytes), 4, 13, false, {});
  ASSERT_TRUE(res.ok());
  Rows r = Read(cols, false);
  EXPECT_EQ(r.offsets.front(), 4);
  EXPECT_EQ(r.offsets.back(), 12);
  EXPECT_EQ(r.offsets.size(), 9u);
  EXPECT_EQ(res->next_offset, 20);
}

TEST(RecordColumns, SkipsControlBatches) {
  BatchProducerFields txn{7, 0, 0, true, false};
  std::string bytes = Batch(0, 3, Compression::kNone, txn);
  std::string marker = BuildEndTxnMarkerBatch(7, 0, {true, 0});
  SetBaseOffset(Bytes(marker), Offset(3));
  bytes += marker + Batch(4, 2);
  for (bool committed : {false, true}) {
    RecordColumns cols("t", 0, false);
    auto res = cols.Append(CBytes(bytes), 0, 100, committed, {});
    ASSERT_TRUE(res.ok());
    EXPECT_EQ(res->next_offset, 6);
    EXPECT_EQ(Read(cols, false).offsets, (std::vector<int64_t>{0, 1, 2, 4, 5}));
  }
}

TEST(RecordColumns, ReadCommittedSkipsAbortedTransactions) {
  // producer 7 aborts [0, 3) with its marker at 5; producer 8 commits [3, 5)
  // with its marker at 6; producer 7 then writes [7, 9) in a new transaction.
  BatchProducerFields p7{7, 0, 0, true, false}, p8{8, 0, 0, true, false};
  std::string abort7 = BuildEndTxnMarkerBatch(7, 0, {false, 0});
  std::string commit8 = BuildEndTxnMarkerBatch(8, 0, {true, 0});
  SetBaseOffset(Bytes(abort7), Offset(5));
  SetBaseOffset(Bytes(commit8), Offset(6));
  std::string bytes = Batch(0, 3, Compression::kZstd, p7) + Batch(3, 2, Compression::kNone, p8) +
                      abort7 + commit8 + Batch(7, 2, Compression::kNone, p7);
  std::vector<AbortedTransaction> aborted{{7, 0}};
  RecordColumns committed("t", 0, false);
  ASSERT_TRUE(committed.Append(CBytes(bytes), 0, 100, true, aborted).ok());
  EXPECT_EQ(Read(committed, false).offsets, (std::vector<int64_t>{3, 4, 7, 8}));
  RecordColumns uncommitted("t", 0, false);
  ASSERT_TRUE(uncommitted.Append(CBytes(bytes), 0, 100, false, aborted).ok());
  EXPECT_EQ(Read(uncommitted, false).offsets, (std::vector<int64_t>{0, 1, 2, 3, 4, 7, 8}));
}

TEST(RecordColumns, TruncatedLastBatchEndsTheData) {
  std::string bytes = Batch(0, 4) + Batch(4, 4);
  for (size_t cut : {bytes.size() - 1, bytes.size() - 30, Batch(0, 4).size() + 5}) {
    RecordColumns cols("t", 0, false);
    auto res = cols.Append(CBytes(bytes.substr(0, cut)), 0, 100, false, {});
    ASSERT_TRUE(res.ok()) << res.status().ToString();
    EXPECT_EQ(res->next_offset, 4);
    EXPECT_EQ(res->rows, 4);
  }
  RecordColumns empty("t", 0, false);
  auto res = empty.Append(CBytes(bytes.substr(0, 20)), 0, 100, false, {});
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->next_offset, 0);
  EXPECT_EQ(res->rows, 0);
}

TEST(RecordColumns, CorruptBatchIsAnError) {
  std::string good = Batch(0, 4);
  std::string bad_crc = Batch(4, 4);
  bad_crc[bad_crc.size() - 2] ^= 0x55;
  RecordColumns cols("t", 0, false);
  auto res = cols.Append(CBytes(good + bad_crc), 0, 100, false, {});
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.status().code(), StatusCode::kCorruption);
  EXPECT_NE(res.status().message().find("offset 4"), std::string::npos);
  EXPECT_EQ(cols.num_rows(), 4);  // the good batch before it stays

  std::string short_len = Batch(0, 2);
  coding::StoreBE32(Bytes(short_len).data() + batch::kLengthPos, 10);  // below the header
  RecordColumns c2("t", 0, false);
  EXPECT_EQ(c2.Append(CBytes(short_len), 0, 100, false, {}).status().code(),
            StatusCode::kCorruption);

  // A compressed batch whose payload does not decompress, CRC fixed up.
  std::string gz = Batch(0, 4, Compression::kGzip);
  gz[kBatchHeaderSize + 12] ^= 0x5a;
  coding::StoreBE32(Bytes(gz).data() + batch::kCrcPos, batch::ComputeCrc(CBytes(gz)));
  RecordColumns c3("t", 0, false);
  EXPECT_EQ(c3.Append(CBytes(gz), 0, 100, false, {}).status().code(), StatusCode::kCorruption);
}

TEST(RecordColumns, LegacyFormatIsUnsupported) {
  std::string b = Batch(0, 1);
  b[batch::kMagicPos] = 1;
  RecordColumns cols("t", 0, false);
  EXPECT_EQ(cols.Append(CBytes(b), 0, 100, false, {}).status().code(), StatusCode::kUnsupported);
}

TEST(RecordColumns, ExportOutlivesTheColumnsAndChildrenRelease) {
  std::string bytes = Batch(0, 3);
  ArrowArray a;
  {
    RecordColumns cols("topic", 1, true);
    ASSERT_TRUE(cols.Append(CBytes(bytes), 0, 100, false, {}).ok());
    cols.Export(&a);
  }
  ASSERT_EQ(a.length, 3);
  EXPECT_EQ(*Var(a.children[1], 2), "v2");
  // A consumer may move a child out and release it on its own.
  ArrowArray child = *a.children[1];
  a.children[1]->release = nullptr;
  a.release(&a);
  EXPECT_EQ(*Var(&child, 0), "v0");
  child.release(&child);
  EXPECT_EQ(child.release, nullptr);
}

}  // namespace
}  // namespace headrace
