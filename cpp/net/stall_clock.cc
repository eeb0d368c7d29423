#include "net/stall_clock.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>

namespace headrace::net {

StallClock::~StallClock() {
  if (schedstat_fd_ >= 0) ::close(schedstat_fd_);
}

StallClock::Usage StallClock::ThreadUsage() {
  if (schedstat_fd_ == -2) {
    schedstat_fd_ = ::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    if (schedstat_fd_ < 0) schedstat_fd_ = -1;
  }
  if (schedstat_fd_ >= 0) {
    char buf[96];
    const ssize_t n = ::pread(schedstat_fd_, buf, sizeof(buf) - 1, 0);
    if (n > 0) {
      buf[n] = '\0';
      char* end = nullptr;
      const long long cpu_ns = std::strtoll(buf, &end, 10);
      const long long delay_ns = std::strtoll(end, nullptr, 10);
      return {cpu_ns / 1000, delay_ns / 1000, 0};
    }
    ::close(schedstat_fd_);
    schedstat_fd_ = -1;  // from now on getrusage
  }
  rusage ru{};
  getrusage(RUSAGE_THREAD, &ru);
  auto us = [](const timeval& t) { return int64_t{t.tv_sec} * 1000000 + t.tv_usec; };
  return {us(ru.ru_utime) + us(ru.ru_stime), 0, ru.ru_nvcsw};
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
  const bool schedstat = schedstat_fd_ >= 0;
  Usage end = ThreadUsage();
  if (schedstat != (schedstat_fd_ >= 0)) return std::nullopt;  // fell back mid-turn
  const std::chrono::microseconds run_delay(end.run_delay_us - usage_.run_delay_us);
  std::chrono::microseconds off_cpu(wall.count() - (end.cpu_us - usage_.cpu_us) -
                                    run_delay.count());
  if (off_cpu < kThreshold) return std::nullopt;
  if (!schedstat && end.voluntary == usage_.voluntary) return std::nullopt;  // never blocked
  return Stall{off_cpu, wall, run_delay};
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
