// Readers running beside the appender must only ever see whole valid
// batches with dense offsets.
#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "headrace/log.h"
#include "log/testing.h"

namespace headrace {
namespace {

using testing::Bytes;
using testing::TempDir;

TEST(LogConcurrency, ReadersSeeOnlyWholeValidBatchesWhileAppending) {
  TempDir dir;
  LogConfig c = testing::SmallConfig();
  c.segment_bytes = 64 * 1024;
  auto log = std::move(Log::Open(dir.path(), c)).value();
  constexpr int kBatches = 3000;
  std::atomic<bool> done{false};
  std::atomic<int64_t> failures{0};
  auto reader = [&](int64_t max_bytes) {
    Offset next(0);
    while (true) {
      bool finished = done.load();
      Offset end = log->end_offset();
      while (next < end) {
        auto r = log->Read(next, max_bytes, end);
        if (!r.ok() || r->slices.empty()) { failures++; return; }
        std::string bytes = testing::SliceBytes(*r);
        if (static_cast<int64_t>(bytes.size()) != r->bytes) { failures++; return; }
        auto recs = DecodeRecords({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
        if (!recs.ok() || recs->empty()) { failures++; return; }
        for (const Record& rec : *recs) {
          if (rec.offset < next) continue;
          if (rec.offset != next || rec.value->size() != static_cast<size_t>(rec.offset.value() % 300)) {
            failures++;
            return;
          }
          next = next + 1;
        }
      }
      if (finished && next == log->end_offset()) return;
    }
  };
  std::thread r1(reader, 1), r2(reader, 256 * 1024);
  int64_t offset = 0;
  for (int i = 0; i < kBatches; ++i) {
    std::vector<RecordInput> in(1 + i % 4);
    for (auto& rec : in) {
      rec.value = std::string((offset++) % 300, 'v');
      rec.timestamp = TimestampMs(i);
    }
    std::string b = BuildBatch(in);
    ASSERT_TRUE(log->Append(Bytes(b)).ok());
    if (i % 500 == 0) {
      ASSERT_TRUE(log->Flush().ok());
    }
  }
  done.store(true);
  r1.join();
  r2.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(log->segment_count(), 5);
}

}  // namespace
}  // namespace headrace
