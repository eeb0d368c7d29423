#include "net/stall_clock.h"

#include <sys/resource.h>

namespace headrace::net {

StallClock::Usage StallClock::ThreadUsage() {
  rusage ru{};
  getrusage(RUSAGE_THREAD, &ru);
  auto us = [](const timeval& t) { return int64_t{t.tv_sec} * 1000000 + t.tv_usec; };
  return {us(ru.ru_utime) + us(ru.ru_stime), ru.ru_nvcsw, ru.ru_nivcsw};
}

void StallClock::TurnBegins() {
  in_turn_ = true;
  usage_ = ThreadUsage();
  begin_ = Clock::now();
}

std::optional<StallClock::Stall> StallClock::TurnEnds() {
  if (!in_turn_) return std::nullopt;
  in_turn_ = false;
  auto wall = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - begin_);
  if (wall < kThreshold) return std::nullopt;  // CPU time <= wall: cannot be a stall
  Usage end = ThreadUsage();
  std::chrono::microseconds off_cpu(wall.count() - (end.cpu_us - usage_.cpu_us));
  int64_t voluntary = end.voluntary - usage_.voluntary;
  if (off_cpu < kThreshold || voluntary == 0) return std::nullopt;
  return Stall{off_cpu, wall, voluntary, end.involuntary - usage_.involuntary};
}

void StallCounters::Add(const StallClock::Stall& s) {
  stalls_.fetch_add(1, std::memory_order_relaxed);
  off_cpu_us_.fetch_add(s.off_cpu.count(), std::memory_order_relaxed);
  int64_t seen = max_off_cpu_us_.load(std::memory_order_relaxed);
  while (s.off_cpu.count() > seen &&
         !max_off_cpu_us_.compare_exchange_weak(seen, s.off_cpu.count(),
                                                std::memory_order_relaxed)) {
  }
}

StallCounters::Totals StallCounters::totals() const {
  return {stalls_.load(std::memory_order_relaxed), off_cpu_us_.load(std::memory_order_relaxed),
          max_off_cpu_us_.load(std::memory_order_relaxed)};
}

}  // namespace headrace::net
