#include "broker/security/quota/sampled_rate.h"

#include <algorithm>
#include <cmath>

namespace headrace::broker::quota {

SampledRate::SampledRate(int samples, int64_t window_ms)
    : samples_(std::max(samples, 1)), window_ms_(std::max<int64_t>(window_ms, 1)) {
  ring_.reserve(static_cast<size_t>(samples_));
}

void SampledRate::Record(double value, int64_t now_ms) {
  if (ring_.empty()) ring_.push_back({now_ms, 0});
  if (now_ms - ring_[current_].start_ms >= window_ms_) {  // complete: advance
    current_ = (current_ + 1) % static_cast<size_t>(samples_);
    if (current_ >= ring_.size()) ring_.push_back({now_ms, 0});
    else ring_[current_] = {now_ms, 0};
  }
  ring_[current_].value += value;
}

void SampledRate::Purge(int64_t now_ms) {
  const int64_t expire = static_cast<int64_t>(samples_) * window_ms_;
  for (Sample& s : ring_) {
    if (now_ms - s.start_ms >= expire) s = {now_ms, 0};
  }
}

int64_t SampledRate::WindowMs(int64_t now_ms) {
  Purge(now_ms);
  int64_t oldest = now_ms;
  for (const Sample& s : ring_) oldest = std::min(oldest, s.start_ms);
  int64_t elapsed = now_ms - oldest;
  const int64_t full = elapsed / window_ms_;
  const int64_t min_full = samples_ - 1;
  if (full < min_full) elapsed += (min_full - full) * window_ms_;
  return std::max<int64_t>(elapsed, 1);
}

double SampledRate::Rate(int64_t now_ms) {
  const int64_t window = WindowMs(now_ms);  // purges first
  double total = 0;
  for (const Sample& s : ring_) total += s.value;
  return total * 1000.0 / static_cast<double>(window);
}

int64_t SampledRate::ThrottleMs(double bound, int64_t now_ms) {
  const double rate = Rate(now_ms);
  if (!(rate > bound) || bound <= 0) return 0;
  return std::llround((rate - bound) / bound * static_cast<double>(WindowMs(now_ms)));
}

}  // namespace headrace::broker::quota
