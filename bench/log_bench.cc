// Log engine micro-benchmarks:
//   Append/*        1 KiB records in ~64 KiB batches appended to a log (page
//                   cache, no fsync) versus a plain write() loop of the same
//                   bytes; the ratio is printed at the end.
//   OffsetLookup    Read(offset) of one batch at a random offset of a log of
//                   many segments (index lookup + header scan + slice).
//   Fetch1MiB       Read of 1 MiB of slices from a random offset.
//   Crc32c/*        CRC32C throughput, hardware and portable.
// Data goes under $TMPDIR (default /tmp).
#include <fcntl.h>
#include <unistd.h>

#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <random>

#include "common/crc32c.h"
#include "headrace/log.h"
#include "log/testing.h"

namespace headrace {
namespace {

constexpr int kRecordBytes = 1024;
constexpr int kRecordsPerBatch = 63;  // ~64 KiB per batch with record overhead
constexpr int64_t kRotateBytes = 256LL << 20;

std::string BenchBatch() { return testing::MakeBatch(kRecordsPerBatch, kRecordBytes, 1700000000000); }

void BM_AppendLog(benchmark::State& state) {
  testing::TempDir dir;
  LogConfig c;
  c.segment_bytes = kRotateBytes;
  c.retention_ms = -1;
  auto log = std::move(Log::Open(dir.path(), c)).value();
  std::string batch = BenchBatch();
  int64_t appended = 0;
  for (auto _ : state) {
    auto r = log->Append(testing::Bytes(batch));
    if (!r.ok()) state.SkipWithError(r.status().ToString().c_str());
    appended += batch.size();
    if (log->segment_count() > 2) {  // keep the page cache footprint bounded
      state.PauseTiming();
      (void)log->DeleteRecordsBefore(log->end_offset());
      state.ResumeTiming();
    }
  }
  state.SetBytesProcessed(appended);
  state.counters["records/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kRecordsPerBatch,
                         benchmark::Counter::kIsRate);
}
BENCHMARK(BM_AppendLog)->Name("Append/Log")->MinTime(2.0)->UseRealTime();

void BM_AppendWrite(benchmark::State& state) {
  testing::TempDir dir;
  std::string batch = BenchBatch();
  int n = 0;
  std::string path = dir.sub("plain" + std::to_string(n));
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  int64_t in_file = 0, appended = 0;
  for (auto _ : state) {
    if (write(fd, batch.data(), batch.size()) != static_cast<ssize_t>(batch.size()))
      state.SkipWithError("write failed");
    in_file += batch.size();
    appended += batch.size();
    if (in_file >= kRotateBytes) {  // same file churn as the log's segments
      state.PauseTiming();
      close(fd);
      unlink(path.c_str());
      path = dir.sub("plain" + std::to_string(++n));
      fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      in_file = 0;
      state.ResumeTiming();
    }
  }
  close(fd);
  state.SetBytesProcessed(appended);
}
BENCHMARK(BM_AppendWrite)->Name("Append/PlainWrite")->MinTime(2.0)->UseRealTime();

// A log of many 1 MiB segments of 4-record batches of 1 KiB records.
struct ManySegments {
  testing::TempDir dir;
  std::unique_ptr<Log> log;
  ManySegments() {
    LogConfig c;
    c.segment_bytes = 1 << 20;
    c.retention_ms = -1;
    log = std::move(Log::Open(dir.path(), c)).value();
    std::string batches;
    for (int i = 0; i < 16; ++i) batches += testing::MakeBatch(4, kRecordBytes, 1700000000000 + i);
    while (log->segment_count() < 200) {
      std::string copy = batches;
      (void)log->Append(testing::Bytes(copy));
    }
  }
};

ManySegments& Shared() {
  static ManySegments* m = new ManySegments();
  return *m;
}

void BM_OffsetLookup(benchmark::State& state) {
  Log& log = *Shared().log;
  std::mt19937_64 rng(42);
  const int64_t end = log.end_offset().value();
  for (auto _ : state) {
    Offset o(static_cast<int64_t>(rng() % end));
    auto r = log.Read(o, 1, log.end_offset());
    benchmark::DoNotOptimize(r);
  }
  state.counters["segments"] = log.segment_count();
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_OffsetLookup)->Name("OffsetLookup")->UseRealTime();

void BM_Fetch(benchmark::State& state) {
  Log& log = *Shared().log;
  std::mt19937_64 rng(7);
  const int64_t end = log.end_offset().value();
  int64_t bytes = 0;
  for (auto _ : state) {
    auto r = log.Read(Offset(static_cast<int64_t>(rng() % end)), 1 << 20, log.end_offset());
    bytes += r->bytes;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["slice_bytes/s"] = benchmark::Counter(static_cast<double>(bytes), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Fetch)->Name("Fetch1MiB")->UseRealTime();

void BM_Crc(benchmark::State& state, bool hardware) {
  std::string buf(state.range(0), 'x');
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<char>(i * 131);
  uint32_t crc = 0;
  for (auto _ : state) {
    crc = hardware ? crc32c::Extend(crc, buf.data(), buf.size())
                   : crc32c::ExtendPortable(crc, buf.data(), buf.size());
    benchmark::DoNotOptimize(crc);
  }
  state.SetBytesProcessed(state.iterations() * buf.size());
  state.SetLabel(hardware ? (crc32c::HardwareAccelerated() ? "sse4.2" : "fallback") : "portable");
}
BENCHMARK_CAPTURE(BM_Crc, hardware, true)->Name("Crc32c/hardware")->Arg(4096)->Arg(64 << 10)->Arg(1 << 20);
BENCHMARK_CAPTURE(BM_Crc, portable, false)->Name("Crc32c/portable")->Arg(4096)->Arg(64 << 10)->Arg(1 << 20);

// Console output plus the Log/PlainWrite append ratio at the end.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      // Single runs, or the median when repetitions are aggregated.
      if (r.run_type == Run::RT_Aggregate && r.aggregate_name != "median") continue;
      auto it = r.counters.find("bytes_per_second");
      if (it != r.counters.end()) rates_[r.benchmark_name()] = it->second.value;
    }
    ConsoleReporter::ReportRuns(runs);
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    double log = Rate("Append/Log"), plain = Rate("Append/PlainWrite");
    if (log > 0 && plain > 0)
      std::printf("\nappend throughput: log %.0f MiB/s, plain write() %.0f MiB/s, ratio %.2f\n",
                  log / (1 << 20), plain / (1 << 20), log / plain);
  }

 private:
  double Rate(const std::string& prefix) const {
    for (const auto& [name, v] : rates_)
      if (name.rfind(prefix, 0) == 0) return v;
    return 0;
  }
  std::map<std::string, double> rates_;
};

}  // namespace
}  // namespace headrace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  headrace::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
