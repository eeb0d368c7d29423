// A log-linear latency histogram: 64 sub-buckets per power of two, so any
// recorded value is reported within ~1.6% of itself. Fixed size (4,096
// counters), no allocation on Record, mergeable. Not thread-safe: each thread
// records into its own and the results are merged afterwards.
#pragma once

#include <bit>
#include <cstdint>
#include <vector>

namespace headrace::loadgen {

class Histogram {
 public:
  Histogram() : counts_(kBuckets, 0) {}

  void Record(uint64_t v) {
    ++counts_[Index(v)];
    ++total_;
    if (v > max_) max_ = v;
  }
  void Merge(const Histogram& o) {
    for (int i = 0; i < kBuckets; ++i) counts_[i] += o.counts_[i];
    total_ += o.total_;
    if (o.max_ > max_) max_ = o.max_;
  }
  uint64_t count() const { return total_; }
  uint64_t max() const { return max_; }

  // The value at quantile q (0 < q <= 1), as the middle of its bucket
  // (clamped to max()); 0 when empty.
  uint64_t Quantile(double q) const {
    if (total_ == 0) return 0;
    uint64_t rank = static_cast<uint64_t>(q * static_cast<double>(total_) + 0.999999);
    if (rank < 1) rank = 1;
    uint64_t seen = 0;
    for (int i = 0; i < kBuckets; ++i) {
      seen += counts_[i];
      if (seen >= rank) {
        uint64_t v = Middle(i);
        return v > max_ ? max_ : v;
      }
    }
    return max_;
  }

 private:
  static constexpr int kSubBits = 6;
  static constexpr uint64_t kSub = 1u << kSubBits;  // 64
  static constexpr int kBuckets = 64 * 64;

  // Values below 2*kSub map to themselves; above, (shift, top 7 bits).
  static int Index(uint64_t v) {
    if (v < 2 * kSub) return static_cast<int>(v);
    int msb = 63 - std::countl_zero(v);
    int shift = msb - kSubBits;
    return static_cast<int>((shift + 1) * kSub + ((v >> shift) - kSub));
  }
  static uint64_t Middle(int i) {
    if (i < static_cast<int>(2 * kSub)) return static_cast<uint64_t>(i);
    int shift = i / static_cast<int>(kSub) - 1;
    uint64_t mant = static_cast<uint64_t>(i) % kSub + kSub;
    return (mant << shift) + ((uint64_t{1} << shift) >> 1);
  }

  std::vector<uint64_t> counts_;
  uint64_t total_ = 0;
  uint64_t max_ = 0;
};

}  // namespace headrace::loadgen
