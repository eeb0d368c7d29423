// StallClock: did a network thread's turn block? A turn is the work between
// two waits for events (epoll_wait / io_uring_submit_and_wait): reading
// requests, running handlers, writing replies. A turn whose wall time
// exceeds its thread's CPU time by kThreshold or more, with at least one
// voluntary context switch, spent that time off CPU in a blocking call (a
// disk write into a page writeback holds, a major page fault, a lock): every
// connection of the thread waited with it (docs/performance.md "Network
// thread stalls"). Time the thread was preempted in the same turn counts
// too (`involuntary` says whether it was).
//
// Cost: one getrusage(RUSAGE_THREAD) per turn (0.3-0.6 us) and two
// steady_clock reads; a second getrusage only for a turn of kThreshold or
// more. Threading: one per loop thread, used by that thread only.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>

namespace headrace::net {

class StallClock {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kThreshold{10};

  struct Stall {
    std::chrono::microseconds off_cpu;  // wall time minus CPU time of the turn
    std::chrono::microseconds wall;
    int64_t voluntary = 0;    // context switches: blocked
    int64_t involuntary = 0;  // context switches: preempted
  };

  // The thread returned from its wait: a turn begins.
  void TurnBegins();
  // The thread is about to wait: the turn ends. The stall, if the turn was
  // one; nothing before the first TurnBegins.
  std::optional<Stall> TurnEnds();

 private:
  struct Usage {
    int64_t cpu_us = 0;
    int64_t voluntary = 0;
    int64_t involuntary = 0;
  };
  static Usage ThreadUsage();

  bool in_turn_ = false;
  Clock::time_point begin_{};
  Usage usage_{};
};

// The stalls of all network threads of one Server: Add from the loop
// threads, totals() from any thread (the metrics page).
class StallCounters {
 public:
  struct Totals {
    uint64_t stalls = 0;
    int64_t off_cpu_us = 0;      // summed over the stalls
    int64_t max_off_cpu_us = 0;  // the longest
  };
  void Add(const StallClock::Stall& s);
  Totals totals() const;

 private:
  std::atomic<uint64_t> stalls_{0};
  std::atomic<int64_t> off_cpu_us_{0};
  std::atomic<int64_t> max_off_cpu_us_{0};
};

}  // namespace headrace::net
