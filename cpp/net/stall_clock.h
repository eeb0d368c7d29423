// StallClock: did a network thread's turn block? A turn is the work between
// two waits for events (epoll_wait / io_uring_submit_and_wait): reading
// requests, running handlers, writing replies. A turn that spent kThreshold
// or more off CPU and not waiting for a CPU, i.e. wall time minus its CPU
// time minus its run-queue delay, was in a blocking call (a disk write into
// a page writeback holds, a major page fault, a lock): every connection of
// the thread waited with it (docs/performance.md "Network thread stalls").
// A turn that was only preempted (runnable, waiting for a core on a busy
// machine) is not a stall; its run-queue delay is reported with a stall.
//
// The thread's CPU time and run-queue delay come from
// /proc/thread-self/schedstat (kept open per thread; Linux's schedstat
// line "on-CPU ns, run-queue ns, timeslices"). Where that file cannot be
// read, getrusage(RUSAGE_THREAD) gives the CPU time and a turn with a
// voluntary context switch counts whole, preemption included.
//
// Cost: one pread of schedstat per turn (0.4-0.5 us; getrusage, the
// fallback, 0.2-0.3 us) and two steady_clock reads; a second pread only for
// a turn of kThreshold or more. Threading: one per loop thread, used by that
// thread only (the file is opened by the first TurnBegins, in that thread).
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
    std::chrono::microseconds off_cpu;  // blocked: wall - CPU time - run-queue delay
    std::chrono::microseconds wall;
    std::chrono::microseconds run_delay{0};  // waiting for a CPU in the turn (preempted)
  };

  StallClock() = default;
  ~StallClock();
  StallClock(const StallClock&) = delete;
  StallClock& operator=(const StallClock&) = delete;

  // The thread returned from its wait: a turn begins.
  void TurnBegins();
  // The thread is about to wait: the turn ends. The stall, if the turn was
  // one; nothing before the first TurnBegins.
  std::optional<Stall> TurnEnds();

 private:
  struct Usage {
    int64_t cpu_us = 0;
    int64_t run_delay_us = 0;  // schedstat only
    int64_t voluntary = 0;     // getrusage only
  };
  Usage ThreadUsage();

  int schedstat_fd_ = -2;  // -2: not opened yet; -1: unavailable (getrusage)
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
