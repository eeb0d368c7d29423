#include "common/sampled_rate.h"

#include <algorithm>

namespace headrace {

SampledRate::SampledRate(int num_windows, std::chrono::milliseconds window)
    : window_(std::max(window, std::chrono::milliseconds(1))),
      samples_(static_cast<size_t>(std::max(num_windows, 1))) {}

void SampledRate::Expire(Clock::time_point now) const {
  // A window older than the whole span no longer counts.
  const auto span = window_ * static_cast<int64_t>(samples_.size());
  for (Sample& s : samples_) {
    if (s.used && now - s.start >= span) s = Sample{};
  }
}

SampledRate::Sample& SampledRate::Current(Clock::time_point now) {
  Sample& cur = samples_[current_];
  if (cur.used && now - cur.start < window_) return cur;
  if (cur.used) current_ = (current_ + 1) % samples_.size();
  Sample& next = samples_[current_];
  next = Sample{now, 0, true};
  return next;
}

void SampledRate::Record(double amount, Clock::time_point now) {
  std::lock_guard<std::mutex> l(mu_);
  Expire(now);
  Current(now).amount += amount;
}

double SampledRate::Rate(Clock::time_point now) const {
  std::lock_guard<std::mutex> l(mu_);
  Expire(now);
  double total = 0;
  Clock::time_point oldest = now;
  for (const Sample& s : samples_) {
    if (!s.used) continue;
    total += s.amount;
    oldest = std::min(oldest, s.start);
  }
  auto elapsed = now - oldest;
  const auto min_span = window_ * static_cast<int64_t>(samples_.size() - 1);
  // Kafka counts the missing full windows as elapsed (never less than one
  // window in all, so one sample never divides by ~0).
  elapsed = std::max<Clock::duration>({elapsed, min_span, window_});
  return total / std::chrono::duration<double>(elapsed).count();
}

}  // namespace headrace
