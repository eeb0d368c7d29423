// Flusher micro-benchmark: one group-commit round of P partitions, each with
// one fresh 100-byte record, fsynced by a Flusher of T threads
// (headrace.flush.threads); real logs (Log::Open, fdatasync) under $TMPDIR
// (default /tmp: put it on the disk under test). A round = append one batch
// to each partition while the flusher is held, release it, wait until every
// partition's flushed offset covers its batch. Reported: time per round and
// per partition fsync (rounds/s counter).
//   FlushRound/partitions:P/threads:T
#include <benchmark/benchmark.h>

#include <chrono>
#include <memory>
#include <vector>

#include "broker/partition/flusher.h"
#include "broker/partition/partition.h"
#include "headrace/log.h"
#include "log/testing.h"

namespace headrace::broker {
namespace {

void BM_FlushRound(benchmark::State& state) {
  const int partitions = static_cast<int>(state.range(0));
  Flusher::Options options;
  options.threads = static_cast<int>(state.range(1));
  Flusher flusher(options);
  headrace::testing::TempDir dir;
  LogConfig c;
  c.retention_ms = -1;
  PartitionServices services;
  services.flusher = &flusher;
  services.commit_requires_fsync = true;
  std::vector<std::shared_ptr<Partition>> parts;
  for (int i = 0; i < partitions; ++i) {
    auto log = Log::Open(dir.path() + "/p" + std::to_string(i), c);
    if (!log.ok()) return state.SkipWithError(log.status().ToString().c_str());
    parts.push_back(std::make_shared<Partition>(TopicPartition{"bench", i}, Uuid::Random(),
                                                std::move(log).value(), TopicSettings{},
                                                services));
  }
  std::string batch = headrace::testing::MakeBatch(1, 100, 1700000000000);
  std::vector<Offset> ends(partitions);
  for (auto _ : state) {
    flusher.Hold();
    for (int i = 0; i < partitions; ++i) {
      std::string copy = batch;  // appends may rewrite the header (offsets)
      auto r = parts[i]->AppendAsLeader(headrace::testing::Bytes(copy), -1);
      if (!r.ok()) return state.SkipWithError(r.status().ToString().c_str());
      ends[i] = r->last_offset + 1;
    }
    flusher.Release();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (int i = 0; i < partitions; ++i) {
      if (!parts[i]->WaitFlushed(ends[i], deadline)) return state.SkipWithError("not flushed");
    }
  }
  state.counters["fsyncs/s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * partitions, benchmark::Counter::kIsRate);
  flusher.Stop();
  for (auto& p : parts) (void)p->Close();
}
BENCHMARK(BM_FlushRound)
    ->ArgNames({"partitions", "threads"})
    ->ArgsProduct({{1, 2, 4, 8, 16}, {1, 2, 4, 8}})
    ->MinTime(1.0)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace headrace::broker

BENCHMARK_MAIN();
