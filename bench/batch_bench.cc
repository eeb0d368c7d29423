// Record batch validation micro-benchmarks: ValidateBatch (header, CRC32C,
// record walk for uncompressed batches), which every produced batch goes
// through before it is appended.
//   Validate/records:R/value:V   one batch of R records of V-byte values
//   CrcOnly/...                  the CRC32C part alone over the same bytes,
//                                to show what the record walk adds
//   ValidateCompressed/codec:C/records:R/value:V
//                                ValidateBatch of the same batch compressed
//                                with codec C (decompression + record walk)
//   Recompress/from:C/to:T/...   ConvertCompression from codec C to T, what
//                                compression.type costs per batch
//   ConvertLegacy/codec:C/...    a format v1 message set (Produce v0-2) of
//                                the same records, plain or in one wrapper
//                                of codec C, converted to a v2 batch: what
//                                an old client's produce costs before the
//                                append's own checks
// Bytes/s are of the uncompressed batch in every case.
#include <benchmark/benchmark.h>

#include <string>

#include "common/crc32c.h"
#include "headrace/record_batch.h"
#include "log/compression.h"
#include "log/legacy_message_set.h"
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

std::span<const uint8_t> Span(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// Batches that compress like typical payloads: values of repeated words
// with a counter, not all-equal bytes.
std::string TextBatch(int records, size_t value_size) {
  std::vector<RecordInput> in(records);
  for (int i = 0; i < records; ++i) {
    std::string v;
    while (v.size() < value_size) v += "field-" + std::to_string((i * 7919 + v.size()) % 1000) + ",";
    v.resize(value_size);
    in[i].key = "key-" + std::to_string(i);
    in[i].value = std::move(v);
    in[i].timestamp = TimestampMs(1700000000000 + i);
  }
  return BuildBatch(in);
}

void BM_ValidateCompressed(benchmark::State& state) {
  const auto codec = static_cast<Compression>(state.range(0));
  const int records = static_cast<int>(state.range(1));
  std::string plain = TextBatch(records, static_cast<size_t>(state.range(2)));
  std::string batch = ConvertCompression(Span(plain), codec).value();
  for (auto _ : state) {
    auto r = ValidateBatch(Span(batch));
    if (!r.ok()) state.SkipWithError(r.status().ToString().c_str());
    benchmark::DoNotOptimize(r);
  }
  Counters(state, plain, records);
  state.counters["ratio"] = static_cast<double>(plain.size()) / static_cast<double>(batch.size());
}
BENCHMARK(BM_ValidateCompressed)
    ->Name("ValidateCompressed")
    ->ArgNames({"codec", "records", "value"})
    ->ArgsProduct({{0, 1, 2, 3, 4}, {1000}, {100}})
    ->ArgsProduct({{0, 1, 2, 3, 4}, {63}, {1024}});

void BM_Recompress(benchmark::State& state) {
  const auto from = static_cast<Compression>(state.range(0));
  const auto to = static_cast<Compression>(state.range(1));
  const int records = static_cast<int>(state.range(2));
  std::string plain = TextBatch(records, static_cast<size_t>(state.range(3)));
  std::string batch = ConvertCompression(Span(plain), from).value();
  for (auto _ : state) {
    auto r = ConvertCompression(Span(batch), to);
    if (!r.ok()) state.SkipWithError(r.status().ToString().c_str());
    benchmark::DoNotOptimize(r);
  }
  Counters(state, plain, records);
}
BENCHMARK(BM_Recompress)
    ->Name("Recompress")
    ->ArgNames({"from", "to", "records", "value"})
    ->Args({0, 4, 63, 1024})
    ->Args({1, 4, 63, 1024})
    ->Args({3, 4, 63, 1024})
    ->Args({4, 0, 63, 1024})
    ->Args({0, 3, 63, 1024})
    ->Args({0, 1, 63, 1024});

void BM_ConvertLegacy(benchmark::State& state) {
  const auto codec = static_cast<Compression>(state.range(0));
  const int records = static_cast<int>(state.range(1));
  const std::string value(static_cast<size_t>(state.range(2)), 'v');
  std::string set;
  for (int i = 0; i < records; ++i)
    set += testing::LegacyEntry(1, i, "k" + std::to_string(i), value, 0, 1700000000000 + i);
  const size_t plain_size = set.size();
  if (codec != Compression::kNone) {
    std::string compressed;
    if (!compression::Compress(codec, Span(set), &compressed).ok()) state.SkipWithError("compress");
    set = testing::LegacyEntry(1, records - 1, std::nullopt, compressed,
                               static_cast<int8_t>(codec), 1700000000000);
  }
  for (auto _ : state) {
    auto r = ConvertLegacyMessageSet(Span(set));
    if (!r.ok()) state.SkipWithError(r.status().ToString().c_str());
    benchmark::DoNotOptimize(r);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(plain_size));
  state.counters["records/s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * records), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ConvertLegacy)
    ->Name("ConvertLegacy")
    ->ArgNames({"codec", "records", "value"})
    ->ArgsProduct({{0, 1, 3}, {1000}, {100}})
    ->ArgsProduct({{0}, {63}, {1024}});

}  // namespace
}  // namespace headrace

BENCHMARK_MAIN();
