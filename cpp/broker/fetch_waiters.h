// Delayed fetches ("purgatory"): a Fetch that found fewer than min_bytes
// parks here until new data arrives on one of its partitions or its
// max_wait deadline passes, whichever comes first.
//
// Contract: every registered waiter's callback runs exactly once, with
//   kData      a watched partition's high watermark moved past the value the
//              fetch saw (fired on the appending thread, or on the caller of
//              Wait if it had already moved: no lost wakeups),
//   kDeadline  the deadline passed (fired on the timer thread),
//   kShutdown  Shutdown() ran first (fired on the thread calling Shutdown),
// unless Cancel() removed it first. Callbacks run with no lock held, may
// call Wait again (to keep waiting with the time left), and must be cheap:
// re-read the partitions and hand the response to the Responder.
//
// The handler side, in short:
//   auto r = partition->Read(...);                  // remember r.high_watermark
//   if (bytes < min_bytes && max_wait > 0)
//     waiters.Wait({{partition, r.high_watermark}}, now + max_wait, callback);
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
#include <unordered_set>
#include <utility>
#include <vector>

#include "broker/partition.h"

namespace headrace::broker {

enum class WakeReason { kData, kDeadline, kShutdown };

class FetchWaiters final : public PartitionListener {
 public:
  using Clock = std::chrono::steady_clock;
  using Callback = std::function<void(WakeReason)>;

  // A partition to watch and the high watermark the fetch read it at.
  struct Watch {
    std::shared_ptr<Partition> partition;
    Offset seen_high_watermark;
  };

  FetchWaiters();   // starts the timer thread
  ~FetchWaiters();  // Shutdown()
  FetchWaiters(const FetchWaiters&) = delete;
  FetchWaiters& operator=(const FetchWaiters&) = delete;

  // Registers a waiter (see the contract above). Returns its id for Cancel;
  // 0 if it already fired (immediately, before Wait returned).
  uint64_t Wait(std::vector<Watch> watches, Clock::time_point deadline, Callback cb);
  // Removes a waiter without firing it. False if it already fired/was removed.
  bool Cancel(uint64_t id);
  // Fires every pending waiter with kShutdown and stops the timer thread;
  // later Wait calls fire kShutdown at once. Idempotent.
  void Shutdown();

  // PartitionListener: wakes the waiters watching `partition`.
  void OnHighWatermarkAdvanced(Partition& partition) override;

  size_t pending() const;
  // How often the timer thread has woken up (deadlines, notifications,
  // spurious): a Wait whose deadline is not earlier than the one the timer
  // sleeps until must not wake it.
  uint64_t timer_wakeups() const;

 private:
  struct Waiter {
    std::vector<Watch> watches;
    Clock::time_point deadline;
    Callback cb;
  };
  // Removes waiter `id` from every index and returns its callback.
  // REQUIRES: mu_ held and `id` pending.
  Callback ClaimLocked(uint64_t id);
  void TimerLoop();

  mutable std::mutex mu_;  // guards everything below
  std::condition_variable timer_cv_;
  uint64_t next_id_ = 1;
  bool stopping_ = false;
  // When the sleeping timer thread wakes by itself: max() when it waits for
  // a notification, min() while it is awake (it re-reads by_deadline_
  // before sleeping again). Wait notifies only for an earlier deadline.
  Clock::time_point timer_wakes_at_ = Clock::time_point::min();
  uint64_t timer_wakeups_ = 0;
  std::unordered_map<uint64_t, Waiter> waiters_;
  std::unordered_map<const Partition*, std::unordered_set<uint64_t>> by_partition_;
  std::set<std::pair<Clock::time_point, uint64_t>> by_deadline_;
  std::thread timer_;  // last: started after the members above exist
};

}  // namespace headrace::broker
