// SampledRate: a rate (units per second) over a sliding set of fixed
// windows, measured as Kafka's quota metrics measure it (its Rate over
// SampledStat): `num_windows` windows of `window` each; the rate is the sum
// of the live windows divided by the time they span, where that span is at
// least (num_windows - 1) full windows. So a fresh meter is lenient — the
// first (num_windows - 1) * window * bound units pass before the bound is
// reached — and a steady stream converges to its true rate.
//
// Thread-safe (one mutex); meant for per-request, not per-record, calls.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <vector>

namespace headrace {

class SampledRate {
 public:
  using Clock = std::chrono::steady_clock;

  // num_windows >= 1, window > 0.
  SampledRate(int num_windows, std::chrono::milliseconds window);

  void Record(double amount, Clock::time_point now = Clock::now());
  // Units per second at `now`.
  double Rate(Clock::time_point now = Clock::now()) const;

 private:
  struct Sample {
    Clock::time_point start{};
    double amount = 0;
    bool used = false;
  };
  // The window `now` falls in (a stale one is reset); mu_ held.
  Sample& Current(Clock::time_point now);
  void Expire(Clock::time_point now) const;  // mu_ held

  const std::chrono::milliseconds window_;
  mutable std::mutex mu_;
  mutable std::vector<Sample> samples_;
  size_t current_ = 0;
};

}  // namespace headrace
