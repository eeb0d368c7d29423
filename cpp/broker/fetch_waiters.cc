#include "broker/fetch_waiters.h"

namespace headrace::broker {

FetchWaiters::FetchWaiters() : timer_([this] { TimerLoop(); }) {}

FetchWaiters::~FetchWaiters() {
  Shutdown();
  if (timer_.joinable()) timer_.join();  // Shutdown ran on the timer thread itself
}

FetchWaiters::Callback FetchWaiters::ClaimLocked(uint64_t id) {
  auto it = waiters_.find(id);
  Waiter& w = it->second;
  for (const Watch& watch : w.watches) {
    auto p = by_partition_.find(watch.partition.get());
    if (p == by_partition_.end()) continue;
    p->second.erase(id);
    if (p->second.empty()) by_partition_.erase(p);
  }
  by_deadline_.erase({w.deadline, id});
  Callback cb = std::move(w.cb);
  waiters_.erase(it);
  return cb;
}

uint64_t FetchWaiters::Wait(std::vector<Watch> watches, Clock::time_point deadline, Callback cb) {
  std::unique_lock<std::mutex> lock(mu_);
  if (stopping_) {
    lock.unlock();
    cb(WakeReason::kShutdown);
    return 0;
  }
  uint64_t id = next_id_++;
  for (const Watch& w : watches) by_partition_[w.partition.get()].insert(id);
  // A consumer that keeps long-polling registers a later deadline each time;
  // the timer, sleeping until an earlier one, need not hear of it.
  bool wake_timer = deadline < timer_wakes_at_;
  by_deadline_.insert({deadline, id});
  // Checked after indexing: an append that advanced the HW before we were
  // indexed is seen here; one after is seen by OnHighWatermarkAdvanced.
  bool ready = false;
  for (const Watch& w : watches) {
    if (w.partition->high_watermark() > w.seen_high_watermark) ready = true;
  }
  waiters_.emplace(id, Waiter{std::move(watches), deadline, std::move(cb)});
  if (ready) {
    Callback fire = ClaimLocked(id);
    lock.unlock();
    fire(WakeReason::kData);
    return 0;
  }
  lock.unlock();
  if (wake_timer) timer_cv_.notify_one();
  return id;
}

bool FetchWaiters::Cancel(uint64_t id) {
  Callback dropped;  // destroyed outside the lock
  std::lock_guard<std::mutex> lock(mu_);
  if (!waiters_.count(id)) return false;
  dropped = ClaimLocked(id);
  return true;
}

void FetchWaiters::OnHighWatermarkAdvanced(Partition& partition) {
  std::vector<Callback> fire;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = by_partition_.find(&partition);
    if (it == by_partition_.end()) return;
    Offset hw = partition.high_watermark();
    std::vector<uint64_t> ready;
    for (uint64_t id : it->second) {
      for (const Watch& w : waiters_.at(id).watches) {
        if (w.partition.get() == &partition && hw > w.seen_high_watermark) {
          ready.push_back(id);
          break;
        }
      }
    }
    for (uint64_t id : ready) fire.push_back(ClaimLocked(id));
  }
  for (Callback& cb : fire) cb(WakeReason::kData);
}

void FetchWaiters::TimerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    auto now = Clock::now();
    if (by_deadline_.empty() || by_deadline_.begin()->first > now) {
      timer_wakes_at_ = by_deadline_.empty() ? Clock::time_point::max() : by_deadline_.begin()->first;
      if (timer_wakes_at_ == Clock::time_point::max()) {
        timer_cv_.wait(lock);
      } else {
        timer_cv_.wait_until(lock, timer_wakes_at_);
      }
      timer_wakes_at_ = Clock::time_point::min();
      ++timer_wakeups_;
      continue;
    }
    std::vector<Callback> fire;
    while (!by_deadline_.empty() && by_deadline_.begin()->first <= now) {
      fire.push_back(ClaimLocked(by_deadline_.begin()->second));
    }
    lock.unlock();
    for (Callback& cb : fire) cb(WakeReason::kDeadline);
    fire.clear();
    lock.lock();
  }
}

void FetchWaiters::Shutdown() {
  std::vector<Callback> fire;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    while (!waiters_.empty()) fire.push_back(ClaimLocked(waiters_.begin()->first));
  }
  timer_cv_.notify_all();
  if (timer_.joinable() && timer_.get_id() != std::this_thread::get_id()) timer_.join();
  for (Callback& cb : fire) cb(WakeReason::kShutdown);
}

uint64_t FetchWaiters::timer_wakeups() const {
  std::lock_guard<std::mutex> lock(mu_);
  return timer_wakeups_;
}

size_t FetchWaiters::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waiters_.size();
}

}  // namespace headrace::broker
