// SampledRate: a rate measured over `samples` windows of `window_ms`, and
// the throttle time of a quota on it, with Kafka's arithmetic (its
// SampledStat / Rate / QuotaUtils.throttleTime) so that clients see the
// throttle times they would see from Kafka:
//   - a value is added to the current sample; a sample older than
//     window_ms is complete and the next one (reset) becomes current;
//   - samples older than samples * window_ms count as empty;
//   - rate = sum of the samples / elapsed, where elapsed = now - start of
//     the oldest sample, but at least (samples - 1) whole windows (a young
//     rate is not inflated by a short history);
//   - over a quota `bound`: throttle = (rate - bound) / bound * elapsed,
//     the time it takes the rate to come back to the bound.
// Not thread-safe: ClientSensor (quota_manager.h) wraps it with a lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace headrace::broker::quota {

class SampledRate {
 public:
  SampledRate(int samples, int64_t window_ms);

  // Adds `value` at `now_ms` (a monotonic clock in milliseconds).
  void Record(double value, int64_t now_ms);
  // Per second, at `now_ms`.
  double Rate(int64_t now_ms);
  // The span Rate divides by, in milliseconds.
  int64_t WindowMs(int64_t now_ms);
  // 0 when Rate(now_ms) <= bound; else how long (ms) to stay silent.
  int64_t ThrottleMs(double bound, int64_t now_ms);

 private:
  struct Sample {
    int64_t start_ms = 0;
    double value = 0;
  };
  void Purge(int64_t now_ms);

  const int samples_;
  const int64_t window_ms_;
  std::vector<Sample> ring_;  // grows up to samples_
  size_t current_ = 0;
};

}  // namespace headrace::broker::quota
