#include "common/metrics.h"

#include <bit>

namespace headrace::metrics {

size_t ThisThreadShard() {
  static std::atomic<size_t> next{0};
  thread_local const size_t shard = next.fetch_add(1, std::memory_order_relaxed) % kShards;
  return shard;
}

uint64_t Histogram::UpperBound(size_t b) {
  // Bucket 2i ends at 1.5 * 2^(kMinExp+i), bucket 2i+1 at 2^(kMinExp+i+1).
  const uint64_t base = uint64_t{1} << (kMinExp + b / 2);
  return b % 2 == 0 ? base + base / 2 : base * 2;
}

size_t Histogram::BucketOf(uint64_t v) {
  if (v < (uint64_t{1} << kMinExp)) return 0;
  const int exp = static_cast<int>(std::bit_width(v)) - 1;  // 2^exp <= v < 2^(exp+1)
  if (exp >= kMaxExp) return kBuckets;
  const size_t half = (v >> (exp - 1)) & 1;  // v >= 1.5 * 2^exp
  // Bucket b holds [LowerBound(b), UpperBound(b)); bucket 0 also every
  // value below 2^kMinExp.
  return 2 * static_cast<size_t>(exp - kMinExp) + half;
}

HistogramSnapshot Histogram::Snapshot() const {
  HistogramSnapshot out;
  for (const Shard& s : shards_) {
    for (size_t b = 0; b <= kBuckets; ++b) out.counts[b] += s.counts[b].load(std::memory_order_relaxed);
    out.sum += s.sum.load(std::memory_order_relaxed);
  }
  for (uint64_t c : out.counts) out.count += c;
  return out;
}

double HistogramSnapshot::Quantile(double q) const {
  if (count == 0) return 0;
  if (q < 0) q = 0;
  if (q > 1) q = 1;
  const double rank = q * static_cast<double>(count);
  uint64_t below = 0;
  for (size_t b = 0; b < Histogram::kBuckets; ++b) {
    if (counts[b] > 0 && static_cast<double>(below + counts[b]) >= rank) {
      const double lo = static_cast<double>(Histogram::LowerBound(b));
      const double hi = static_cast<double>(Histogram::UpperBound(b));
      const double within = (rank - static_cast<double>(below)) / static_cast<double>(counts[b]);
      return lo + (hi - lo) * within;
    }
    below += counts[b];
  }
  return static_cast<double>(Histogram::UpperBound(Histogram::kBuckets - 1));
}

}  // namespace headrace::metrics
