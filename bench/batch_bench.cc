// Record batch validation micro-benchmarks: ValidateBatch (header, CRC32C,
// record walk for uncompressed batches), which every produced batch goes
// through before it is appended.
//   Validate/records:R/value:V   one batch of R records of V-byte values
//   CrcOnly/...                  the CRC32C part alone over the same bytes,
//                                to show what the record walk adds
#include <benchmark/benchmark.h>

#include <string>

#include "common/crc32c.h"
#include "headrace/record_batch.h"
#include "log/testing.h"

namespace headrace {
namespace {

// CRC32C covers the batch from the attributes field (offset 21) to the end.
constexpr size_t kCrcStart = 21;

void Counters(benchmark::State& state, const std::string& batch, int64_t records) {
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(batch.size()));
  state.counters["records/s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * records), benchmark::Counter::kIsRate);
}

void BM_Validate(benchmark::State& state) {
  const int records = static_cast<int>(state.range(0));
  std::string batch = testing::MakeBatch(records, static_cast<size_t>(state.range(1)),
                                         1700000000000);
  std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(batch.data()), batch.size());
  for (auto _ : state) {
    auto r = ValidateBatch(bytes);
    if (!r.ok()) state.SkipWithError(r.status().ToString().c_str());
    benchmark::DoNotOptimize(r);
  }
  Counters(state, batch, records);
}
// 100-byte records (the msgs/s target), 1 KiB records in ~64 KiB and
// ~1 MiB batches, and 16 KiB records in a ~1 MiB batch.
BENCHMARK(BM_Validate)
    ->Name("Validate")
    ->ArgNames({"records", "value"})
    ->Args({1000, 100})
    ->Args({63, 1024})
    ->Args({1000, 1024})
    ->Args({63, 16384});

void BM_CrcOnly(benchmark::State& state) {
  const int records = static_cast<int>(state.range(0));
  std::string batch = testing::MakeBatch(records, static_cast<size_t>(state.range(1)),
                                         1700000000000);
  for (auto _ : state) {
    uint32_t crc = crc32c::Value(batch.data() + kCrcStart, batch.size() - kCrcStart);
    benchmark::DoNotOptimize(crc);
  }
  Counters(state, batch, records);
}
BENCHMARK(BM_CrcOnly)
    ->Name("CrcOnly")
    ->ArgNames({"records", "value"})
    ->Args({1000, 100})
    ->Args({63, 1024})
    ->Args({1000, 1024})
    ->Args({63, 16384});

}  // namespace
}  // namespace headrace

BENCHMARK_MAIN();
