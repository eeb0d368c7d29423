// The purgatory: the one place where delayed operations wait for an offset
// of a partition to move. A waiter watches one or more
// (partition, watermark, threshold) triples and has a deadline:
//   acks=all produce   (partition, high watermark, last offset + 1)
//   long-poll fetch    (partition, HW or last stable offset, seen + 1), any
//                      of its partitions
//   follower fetches (replication) move replica offsets, which move the HW
//   and so complete produces; transactions will wait on the LSO.
//
// Contract: every registered waiter's callback runs exactly once, with
//   kReady     a watch reached its threshold, or a watched partition changed
//              state (went offline, was truncated or closed, changed role or
//              leader epoch; an ISR change is not one, see PartitionListener):
//              the callback re-reads the partition and decides;
//   kDeadline  the deadline passed first;
//   kShutdown  Shutdown() ran first;
// unless Cancel() removed it before. The callback runs on the waiter's
// executor (the connection's own I/O thread) — posted there, never run on the
// appending, flushing or timer thread; without an executor (tests) it runs
// inline on the waking thread with no lock held. If the executor has stopped,
// the callback is destroyed without running (the connection is gone).
//
// No lost wakeups: Wait indexes the waiter first and re-checks the
// watermarks after, so an advance before indexing is seen by the re-check
// and one after by the notification.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "broker/partition/partition.h"
#include "net/request_handler.h"

namespace headrace::broker {

enum class WakeReason { kReady, kDeadline, kShutdown };

class Purgatory final : public PartitionListener {
 public:
  using Clock = std::chrono::steady_clock;
  using Callback = std::function<void(WakeReason)>;

  // Ready when partition->watermark(which) >= threshold, or when the
  // partition's state_version() is no longer `seen_state` (a state change
  // that happened before Wait indexed the waiter, whose notification it
  // therefore missed). kAnyState skips that check.
  static constexpr uint64_t kAnyState = ~uint64_t{0};
  struct Watch {
    std::shared_ptr<Partition> partition;
    Watermark which;
    Offset threshold;
    uint64_t seen_state = kAnyState;
  };

  Purgatory();   // starts the timer thread ("hr-purgatory")
  ~Purgatory();  // Shutdown()
  Purgatory(const Purgatory&) = delete;
  Purgatory& operator=(const Purgatory&) = delete;

  // Registers a waiter (contract above). Returns its id for Cancel; 0 when
  // it completed at once (its callback is then already posted or run).
  uint64_t Wait(std::vector<Watch> watches, Clock::time_point deadline,
                std::shared_ptr<net::LoopExecutor> executor, Callback cb);
  // Removes a waiter without running it. False if it already completed.
  bool Cancel(uint64_t id);
  // Completes every waiter with kShutdown and stops the timer thread; later
  // Wait calls complete with kShutdown at once. Idempotent.
  void Shutdown();

  // PartitionListener.
  void OnWatermarksAdvanced(Partition& partition, WatermarkSet changed) override;
  void OnStateChanged(Partition& partition) override;

  size_t pending() const;
  // How often the timer thread woke (deadlines, notifications, spurious):
  // a Wait whose deadline is not earlier than the one the timer sleeps
  // until must not wake it.
  uint64_t timer_wakeups() const;

 private:
  struct Waiter {
    std::vector<Watch> watches;
    Clock::time_point deadline;
    std::shared_ptr<net::LoopExecutor> executor;
    Callback cb;
  };
  struct Claimed {
    std::shared_ptr<net::LoopExecutor> executor;
    Callback cb;
  };
  // (threshold, waiter id) on one (partition, watermark), lowest first.
  using ThresholdIndex = std::set<std::pair<int64_t, uint64_t>>;
  struct PartitionIndex {
    ThresholdIndex by_watermark[kWatermarkCount];
    size_t waiters = 0;  // index entries in all of by_watermark
  };

  // Removes waiter `id` from every index and returns what to run.
  // REQUIRES: mu_ held and `id` pending.
  Claimed ClaimLocked(uint64_t id);
  static void Run(std::vector<Claimed>& claimed, WakeReason why);
  void TimerLoop();

  mutable std::mutex mu_;  // guards everything below
  std::condition_variable timer_cv_;
  uint64_t next_id_ = 1;
  bool stopping_ = false;
  // When the sleeping timer wakes by itself: max() while it waits for a
  // notification, min() while awake. Wait notifies only for an earlier one.
  Clock::time_point timer_wakes_at_ = Clock::time_point::min();
  uint64_t timer_wakeups_ = 0;
  std::unordered_map<uint64_t, Waiter> waiters_;
  std::unordered_map<const Partition*, PartitionIndex> by_partition_;
  std::set<std::pair<Clock::time_point, uint64_t>> by_deadline_;
  std::thread timer_;  // last: started after the members above exist
};

}  // namespace headrace::broker
