// Sharded counters, gauges and histograms for the broker's metrics
// (docs/metrics.md). The hot path (a request, an append, an fsync) touches
// only the calling thread's shard: a relaxed atomic add on a cache line no
// other thread normally writes, so recording takes no lock and shares no
// cache line with another recording thread. A scrape sums the shards.
//
// Threads are spread over kShards shards round-robin by first use; with more
// threads than shards two threads share a shard, which stays exact (the adds
// are atomic) and only costs contention. A scrape is not a snapshot across
// shards: a value may be counted in one series and not yet in another.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace headrace::metrics {

inline constexpr size_t kShards = 16;
inline constexpr size_t kCacheLine = 64;

// This thread's shard, in [0, kShards); fixed for the thread's life.
size_t ThisThreadShard();

// N monotonic counters kept together (one cache line per shard for N <= 8).
template <size_t N>
class CounterSet {
 public:
  void Add(size_t i, uint64_t n = 1) {
    shards_[ThisThreadShard()].v[i].fetch_add(n, std::memory_order_relaxed);
  }
  uint64_t Value(size_t i) const {
    uint64_t sum = 0;
    for (const Shard& s : shards_) sum += s.v[i].load(std::memory_order_relaxed);
    return sum;
  }

 private:
  struct alignas(kCacheLine) Shard {
    std::array<std::atomic<uint64_t>, N> v{};
  };
  std::array<Shard, kShards> shards_{};
};

class Counter {
 public:
  void Add(uint64_t n = 1) { set_.Add(0, n); }
  uint64_t Value() const { return set_.Value(0); }

 private:
  CounterSet<1> set_;
};

// A value that goes up and down (e.g. requests in flight): the sum of the
// shards' signed deltas.
class Gauge {
 public:
  void Add(int64_t n) {
    shards_[ThisThreadShard()].v.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
  }
  int64_t Value() const {
    uint64_t sum = 0;  // wraps like two's complement: exact for the true sum
    for (const Shard& s : shards_) sum += s.v.load(std::memory_order_relaxed);
    return static_cast<int64_t>(sum);
  }

 private:
  struct alignas(kCacheLine) Shard {
    std::atomic<uint64_t> v{0};
  };
  std::array<Shard, kShards> shards_{};
};

// Fixed log-scale buckets over non-negative integer values (nanoseconds for
// every histogram of the broker). Two buckets per power of two: bucket
// bounds 2^k and 1.5 * 2^k, from 2^kMinExp up to 2^kMaxExp; values below
// the first bound fall in the first bucket, values at or above the last in
// the overflow bucket. In nanoseconds: ~1 µs to ~68.7 s; a quantile read
// from the buckets is within one bucket (at most 50% of its value, linear
// interpolation inside the bucket does much better on smooth data).
struct HistogramSnapshot;

class Histogram {
 public:
  static constexpr int kMinExp = 10;                  // 1024 ns
  static constexpr int kMaxExp = 36;                  // ~68.7 s
  static constexpr size_t kBuckets = 2 * (kMaxExp - kMinExp);  // + one overflow
  // The exclusive upper bound of bucket `b` (b < kBuckets).
  static uint64_t UpperBound(size_t b);
  static uint64_t LowerBound(size_t b) { return b == 0 ? 0 : UpperBound(b - 1); }
  static size_t BucketOf(uint64_t v);

  void Record(uint64_t v) {
    Shard& s = shards_[ThisThreadShard()];
    s.counts[BucketOf(v)].fetch_add(1, std::memory_order_relaxed);
    s.sum.fetch_add(v, std::memory_order_relaxed);
  }
  HistogramSnapshot Snapshot() const;

 private:
  struct alignas(kCacheLine) Shard {
    std::array<std::atomic<uint64_t>, kBuckets + 1> counts{};  // [kBuckets] = overflow
    std::atomic<uint64_t> sum{0};
  };
  std::array<Shard, kShards> shards_{};
};

struct HistogramSnapshot {
  std::array<uint64_t, Histogram::kBuckets + 1> counts{};  // per bucket, not cumulative
  uint64_t count = 0;
  uint64_t sum = 0;
  // The value below which a fraction `q` (0..1) of the recorded values lie,
  // interpolated linearly inside its bucket; 0 when empty. In the overflow
  // bucket: its lower bound.
  double Quantile(double q) const;
};

}  // namespace headrace::metrics
