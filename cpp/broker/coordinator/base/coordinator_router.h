// A router of a broker's coordinators of one internal topic: one coordinator
// per partition of the topic this broker leads (cluster mode), or one on
// partition 0 (single node). A key (a group id for __consumer_offsets, a
// transactional id for __transaction_state) lives in partition
// abs(Java hashCode(key)) % partitions (group_partition.h; Kafka uses the
// same function for both topics). For(key) gives the coordinator of the
// key's partition, or the error to answer: `elsewhere` when another broker
// coordinates it (cluster mode NOT_COORDINATOR: the client looks again), or
// COORDINATOR_NOT_AVAILABLE while the topic has no partitions yet.
//
// Cheap per partition: the coordinators are opened without a timer thread
// of their own; the router's one timer calls Tick() on all of them.
//
// `C` provides `void Tick()` and `void Stop()` (idempotent; Tick on a
// stopped coordinator does nothing). GroupCoordinators
// (coordinator/group/group_coordinators.h) and txn::TxnCoordinators (coordinator/txn/txn_coordinators.h)
// are the two instances.
//
// Threading: every method may be called from any thread; lookups take one
// short mutex and hand out shared_ptr snapshots.
#pragma once

#include <pthread.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <utility>

#include "broker/coordinator/base/group_partition.h"
#include "broker/base/kafka_error.h"

namespace headrace::broker::group {

template <class C>
struct RouterLookup {
  std::shared_ptr<C> coordinator;  // null: `error` says why
  KafkaError error = KafkaError::kNone;
  int32_t partition = -1;  // the key's partition (-1: no partitions yet)
};

template <class C>
class CoordinatorRouter {
 public:
  using Lookup = RouterLookup<C>;

  // `elsewhere`: the answer for a key whose partition this broker does not
  // coordinate (cluster mode NOT_COORDINATOR, single node
  // COORDINATOR_NOT_AVAILABLE). `timer_name`: the timer thread's name (a
  // literal of at most 15 characters).
  CoordinatorRouter(KafkaError elsewhere, const char* timer_name)
      : elsewhere_(elsewhere), timer_name_(timer_name) {}
  ~CoordinatorRouter() { StopTimer(); }  // does not stop the coordinators
  CoordinatorRouter(const CoordinatorRouter&) = delete;
  CoordinatorRouter& operator=(const CoordinatorRouter&) = delete;

  // The partition count of the topic (0: it does not exist yet).
  void SetPartitionCount(int32_t n) {
    std::lock_guard<std::mutex> l(mu_);
    partitions_ = n;
  }
  int32_t partition_count() const {
    std::lock_guard<std::mutex> l(mu_);
    return partitions_;
  }
  // The key's partition, -1 while there are none.
  int32_t PartitionFor(std::string_view key) const {
    const int32_t n = partition_count();
    return n > 0 ? GroupPartition(key, n) : -1;
  }

  Lookup For(std::string_view key) const {
    Lookup out;
    std::lock_guard<std::mutex> l(mu_);
    if (partitions_ <= 0) {
      out.error = KafkaError::kCoordinatorNotAvailable;
      return out;
    }
    out.partition = GroupPartition(key, partitions_);
    auto it = by_partition_.find(out.partition);
    if (it == by_partition_.end()) {
      out.error = elsewhere_;
      return out;
    }
    out.coordinator = it->second;
    return out;
  }
  // The coordinator of `partition` here, or null.
  std::shared_ptr<C> ForPartition(int32_t partition) const {
    std::lock_guard<std::mutex> l(mu_);
    auto it = by_partition_.find(partition);
    return it == by_partition_.end() ? nullptr : it->second;
  }
  // Every coordinator here, by partition.
  std::map<int32_t, std::shared_ptr<C>> All() const {
    std::lock_guard<std::mutex> l(mu_);
    return by_partition_;
  }

  // Publishes `c` as the coordinator of `partition` (null: none).
  void Set(int32_t partition, std::shared_ptr<C> c) {
    std::lock_guard<std::mutex> l(mu_);
    if (c) {
      by_partition_[partition] = std::move(c);
    } else {
      by_partition_.erase(partition);
    }
  }
  // Removes and returns the coordinator of `partition` (null if none); the
  // caller stops it.
  std::shared_ptr<C> Take(int32_t partition) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = by_partition_.find(partition);
    if (it == by_partition_.end()) return nullptr;
    std::shared_ptr<C> c = std::move(it->second);
    by_partition_.erase(it);
    return c;
  }
  // Take, then stop what was taken (outside the router's lock); no-op when
  // `partition` has none.
  void Stop(int32_t partition) {
    if (std::shared_ptr<C> c = Take(partition)) c->Stop();
  }
  // Stops the timer, then every coordinator (each taken first).
  void StopAll() {
    StopTimer();
    for (const auto& [partition, c] : All()) Stop(partition);
  }

  // Starts the one thread that calls Tick() on every coordinator every
  // `interval_ms`. Once; not after StopTimer.
  void StartTimer(int64_t interval_ms) {
    std::lock_guard<std::mutex> l(mu_);
    if (timer_.joinable() || timer_stopped_) return;
    timer_ = std::thread([this, interval_ms] {
      pthread_setname_np(pthread_self(), timer_name_);
      TimerLoop(interval_ms);
    });
  }
  void StopTimer() {  // idempotent
    {
      std::lock_guard<std::mutex> l(mu_);
      timer_stopped_ = true;
    }
    timer_cv_.notify_all();
    if (timer_.joinable()) timer_.join();
  }

 private:
  void TimerLoop(int64_t interval_ms) {
    std::unique_lock<std::mutex> l(mu_);
    while (!timer_stopped_) {
      timer_cv_.wait_for(l, std::chrono::milliseconds(interval_ms));
      if (timer_stopped_) break;
      // Tick outside the lock: a coordinator's Tick runs callbacks and takes
      // its own mutex; a coordinator taken away meanwhile is stopped, and
      // Tick on a stopped coordinator does nothing.
      std::map<int32_t, std::shared_ptr<C>> all = by_partition_;
      l.unlock();
      for (auto& [p, c] : all) c->Tick();
      all.clear();
      l.lock();
    }
  }

  const KafkaError elsewhere_;
  const char* const timer_name_;
  mutable std::mutex mu_;
  int32_t partitions_ = 0;                              // guarded by mu_
  std::map<int32_t, std::shared_ptr<C>> by_partition_;  // guarded by mu_
  bool timer_stopped_ = false;                          // guarded by mu_
  std::condition_variable timer_cv_;
  std::thread timer_;
};

}  // namespace headrace::broker::group
