// Fetch planning micro-benchmarks: what the Fetch handler does per request
// before any byte is sent — for each requested partition a Partition::Read
// (offset index lookup, batch header scan, FileSlices) within the request's
// budgets, then the FetchResponse encoded into an OutputBuffer whose record
// chunks are file slices (no copy).
//   FetchPlan/read/partitions:N/at_end:E         reads only
//   FetchPlan/read+encode/partitions:N/at_end:E  reads + response encode (v11)
// at_end:0 fetches from a random offset (data returned, up to 1 MiB per
// partition and 50 MiB per request, as librdkafka asks); at_end:1 fetches at
// the high watermark (nothing to return: a caught-up consumer's poll).
// Each partition holds 32 batches of 4 x 1 KiB records. Data under $TMPDIR.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "broker/partition/partition.h"
#include "log/testing.h"
#include "protocol/codec.h"

namespace headrace {
namespace {

using broker::IsolationLevel;
using broker::Partition;

constexpr int64_t kPartitionMaxBytes = 1 << 20;
constexpr int64_t kRequestMaxBytes = 50 << 20;

struct Partitions {
  testing::TempDir dir;
  std::vector<std::unique_ptr<Partition>> parts;

  explicit Partitions(int n) {
    LogConfig config;
    config.retention_ms = -1;
    config.max_index_bytes = 64 << 10;  // keep 1,000 preallocated indexes small
    broker::TopicSettings settings;
    settings.log = config;
    std::string batches = testing::MakeBatches(32, 4, 1024, 1700000000000);
    for (int p = 0; p < n; ++p) {
      std::string sub = dir.sub("bench-" + std::to_string(p));
      auto log = std::move(Log::Open(sub, config)).value();
      std::string copy = batches;
      (void)log->Append(testing::Bytes(copy));
      parts.push_back(std::make_unique<Partition>(broker::TopicPartition{"bench", p}, Uuid(),
                                                  std::move(log), settings,
                                                  broker::PartitionServices{}));
    }
  }
};

// Reads every partition into `resp` like the Fetch handler: per-partition
// and per-request budgets, at least one batch for the first with data.
int64_t Plan(const Partitions& ps, const std::vector<int64_t>& offsets,
             protocol::FetchResponse* resp) {
  auto& topic = resp->responses.emplace_back();
  topic.topic = "bench";
  topic.partitions.resize(ps.parts.size());
  int64_t budget = kRequestMaxBytes, bytes = 0;
  for (size_t i = 0; i < ps.parts.size(); ++i) {
    auto read = ps.parts[i]->Read(Offset(offsets[i]), std::min(kPartitionMaxBytes, budget),
                                  IsolationLevel::kReadUncommitted, bytes == 0);
    auto& out = topic.partitions[i];
    out.partition_index = static_cast<int32_t>(i);
    out.high_watermark = read->high_watermark.value();
    out.last_stable_offset = read->last_stable_offset.value();
    out.log_start_offset = read->log_start_offset.value();
    bytes += read->data.bytes;
    budget = std::max<int64_t>(budget - read->data.bytes, 0);
    out.records = protocol::Records::FromSlices(std::move(read->data.slices));
  }
  return bytes;
}

// Built once per partition count (google-benchmark calls a benchmark
// function several times while it sizes the iteration count); removed at
// exit with the static map.
const Partitions& Shared(int n) {
  static std::map<int, std::unique_ptr<Partitions>> built;
  auto& p = built[n];
  if (!p) p = std::make_unique<Partitions>(n);
  return *p;
}

void FetchPlan(benchmark::State& state, bool encode) {
  const int n = static_cast<int>(state.range(0));
  const bool at_end = state.range(1) != 0;
  const Partitions& ps = Shared(n);
  // 64 precomputed offset sets, cycled (no timing pauses in the loop).
  std::mt19937_64 rng(11);
  std::vector<std::vector<int64_t>> sets(64, std::vector<int64_t>(n));
  for (auto& offsets : sets) {
    for (int i = 0; i < n; ++i) {
      int64_t end = ps.parts[i]->high_watermark().value();
      offsets[i] = at_end ? end : static_cast<int64_t>(rng() % end);
    }
  }
  int64_t bytes = 0;
  size_t k = 0;
  for (auto _ : state) {
    const std::vector<int64_t>& offsets = sets[k++ % sets.size()];
    protocol::FetchResponse resp;
    bytes += Plan(ps, offsets, &resp);
    if (encode) {
      OutputBuffer out;
      protocol::EncodeResponse(out, 42, 11, resp);
      benchmark::DoNotOptimize(out);
    }
  }
  state.counters["partitions/s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * n, benchmark::Counter::kIsRate);
  state.counters["slice_bytes/s"] =
      benchmark::Counter(static_cast<double>(bytes), benchmark::Counter::kIsRate);
}

void BM_Read(benchmark::State& state) { FetchPlan(state, false); }
void BM_ReadEncode(benchmark::State& state) { FetchPlan(state, true); }

BENCHMARK(BM_Read)
    ->Name("FetchPlan/read")
    ->ArgNames({"partitions", "at_end"})
    ->ArgsProduct({{1, 100, 1000}, {0, 1}})
    ->UseRealTime();
BENCHMARK(BM_ReadEncode)
    ->Name("FetchPlan/read+encode")
    ->ArgNames({"partitions", "at_end"})
    ->ArgsProduct({{1, 100, 1000}, {0, 1}})
    ->UseRealTime();

}  // namespace
}  // namespace headrace

BENCHMARK_MAIN();
