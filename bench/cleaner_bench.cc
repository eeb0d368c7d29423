// Log cleaner micro-benchmarks (docs/performance.md, "Log compaction"):
//   CleanPass/<codec>/<versions>  one cleaning pass over a 64 MiB log of
//       100-byte random values, keys cycling so that each is written about
//       `versions` times (1 - 1/versions of the records go), in 100-record
//       batches of
//       `codec`; counted in MB of segments cleaned per second (bytes_in).
//       The log is rebuilt (untimed) before each pass.
//   OffsetMap/Put    key -> offset map insertions (16-byte keys).
// Data goes under $TMPDIR (default /tmp), page cache only (no fsync wait
// beyond the pass's own .cleaned fsync).
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <string>

#include "headrace/log.h"
#include "headrace/record_batch.h"
#include "log/cleaner.h"
#include "log/offset_map.h"
#include "log/testing.h"

namespace headrace {
namespace {

constexpr int64_t kRecordsEstimate = 500000;  // ~64 MiB of ~130-byte records
constexpr int kPerBatch = 100;
constexpr int64_t kLogBytes = 64LL << 20;

std::unique_ptr<Log> BuildLog(const std::string& dir, Compression codec, int versions) {
  LogConfig c;
  c.segment_bytes = 8 << 20;
  c.retention_ms = -1;
  auto log = std::move(Log::Open(dir, c)).value();
  std::string value(100, 'v');
  std::mt19937_64 rng(42);
  const int64_t key_space = kRecordsEstimate / versions;
  int64_t seq = 0;
  while (log->size_bytes() < kLogBytes) {
    std::vector<RecordInput> in(kPerBatch);
    for (int i = 0; i < kPerBatch; ++i, ++seq) {
      in[i].key = "key-" + std::to_string(seq % key_space);
      for (size_t j = 0; j < value.size(); j += 8) {
        uint64_t r = rng();
        std::memcpy(&value[j], &r, std::min<size_t>(8, value.size() - j));
      }
      in[i].value = value;
      in[i].timestamp = TimestampMs(1700000000000 + seq);
    }
    std::string b = BuildBatch(in);
    if (codec != Compression::kNone) b = std::move(ConvertCompression(testing::Bytes(b), codec)).value();
    (void)log->Append(testing::Bytes(b));
  }
  (void)log->Flush();
  return log;
}

void BM_CleanPass(benchmark::State& state) {
  const auto codec = static_cast<Compression>(state.range(0));
  const int versions = static_cast<int>(state.range(1));
  int64_t bytes_in = 0, removed = 0, records = 0;
  for (auto _ : state) {
    state.PauseTiming();
    testing::TempDir dir;
    auto log = BuildLog(dir.path(), codec, versions);
    CleanRequest req;
    req.now_ms = 1700000000000 + (1LL << 40);
    req.clean_below = log->end_offset();
    req.max_segment_bytes = 8 << 20;
    req.dedupe_buffer_bytes = 64 << 20;
    state.ResumeTiming();
    auto r = log->Clean(req);
    state.PauseTiming();
    if (!r.ok()) state.SkipWithError(r.status().ToString().c_str());
    bytes_in += r->bytes_in;
    removed += r->records_removed;
    records += log->end_offset().value();
    (void)log->Close();
    log.reset();
    state.ResumeTiming();
  }
  state.SetBytesProcessed(bytes_in);
  state.counters["removed%"] = records ? 100.0 * static_cast<double>(removed) / static_cast<double>(records) : 0;
}
BENCHMARK(BM_CleanPass)
    ->ArgsProduct({{0, 3, 4}, {2, 10}})
    ->ArgNames({"codec", "versions"})
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_OffsetMapPut(benchmark::State& state) {
  OffsetMap m(24LL * 2000000);
  std::vector<std::string> keys;
  for (int i = 0; i < 1000000; ++i) keys.push_back("key-" + std::to_string(1000000000 + i));
  size_t i = 0;
  for (auto _ : state) {
    if (!m.Put(keys[i], static_cast<int64_t>(i))) state.SkipWithError("full");
    if (++i == keys.size()) {
      i = 0;
      state.PauseTiming();
      m.Clear();
      state.ResumeTiming();
    }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_OffsetMapPut)->Name("OffsetMap/Put");

}  // namespace
}  // namespace headrace

BENCHMARK_MAIN();
