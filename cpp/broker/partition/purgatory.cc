#include "broker/partition/purgatory.h"

#include <pthread.h>

namespace headrace::broker {

Purgatory::Purgatory() : timer_([this] {
      pthread_setname_np(pthread_self(), "hr-purgatory");
      TimerLoop();
    }) {}

Purgatory::~Purgatory() {
  Shutdown();
  if (timer_.joinable()) timer_.join();  // Shutdown ran on the timer thread itself
}

Purgatory::Claimed Purgatory::ClaimLocked(uint64_t id) {
  auto it = waiters_.find(id);
  Waiter& w = it->second;
  for (const Watch& watch : w.watches) {
    auto p = by_partition_.find(watch.partition.get());
    if (p == by_partition_.end()) continue;
    ThresholdIndex& index = p->second.by_watermark[static_cast<size_t>(watch.which)];
    if (index.erase({watch.threshold.value(), id}) == 1 && --p->second.waiters == 0) {
      by_partition_.erase(p);
    }
  }
  by_deadline_.erase({w.deadline, id});
  Claimed claimed{std::move(w.executor), std::move(w.cb)};
  waiters_.erase(it);
  return claimed;
}

void Purgatory::Run(std::vector<Claimed>& claimed, WakeReason why) {
  for (Claimed& c : claimed) {
    if (c.executor) {
      c.executor->Post([cb = std::move(c.cb), why] { cb(why); });
    } else {
      c.cb(why);
    }
  }
  claimed.clear();
}

uint64_t Purgatory::Wait(std::vector<Watch> watches, Clock::time_point deadline,
                         std::shared_ptr<net::LoopExecutor> executor, Callback cb) {
  std::vector<Claimed> now;
  std::unique_lock<std::mutex> lock(mu_);
  if (stopping_) {
    lock.unlock();
    now.push_back({std::move(executor), std::move(cb)});
    Run(now, WakeReason::kShutdown);
    return 0;
  }
  const uint64_t id = next_id_++;
  for (const Watch& w : watches) {
    PartitionIndex& p = by_partition_[w.partition.get()];
    if (p.by_watermark[static_cast<size_t>(w.which)].insert({w.threshold.value(), id}).second) {
      ++p.waiters;
    }
  }
  // A consumer that keeps long-polling registers a later deadline each time;
  // the timer, sleeping until an earlier one, need not hear of it.
  const bool wake_timer = deadline < timer_wakes_at_;
  by_deadline_.insert({deadline, id});
  bool ready = false;
  for (const Watch& w : watches) {
    if (w.partition->watermark(w.which) >= w.threshold) ready = true;
    if (w.seen_state != kAnyState && w.partition->state_version() != w.seen_state) ready = true;
  }
  waiters_.emplace(id, Waiter{std::move(watches), deadline, std::move(executor), std::move(cb)});
  if (ready) {
    now.push_back(ClaimLocked(id));
    lock.unlock();
    Run(now, WakeReason::kReady);
    return 0;
  }
  lock.unlock();
  if (wake_timer) timer_cv_.notify_one();
  return id;
}

bool Purgatory::Cancel(uint64_t id) {
  Claimed dropped;  // destroyed outside the lock
  std::lock_guard<std::mutex> lock(mu_);
  if (!waiters_.count(id)) return false;
  dropped = ClaimLocked(id);
  return true;
}

void Purgatory::OnWatermarksAdvanced(Partition& partition, WatermarkSet changed) {
  std::vector<Claimed> fire;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = by_partition_.find(&partition);
    if (it == by_partition_.end()) return;
    std::vector<uint64_t> ready;
    for (size_t w = 0; w < kWatermarkCount; ++w) {
      if (!(changed & WatermarkBit(static_cast<Watermark>(w)))) continue;
      const ThresholdIndex& index = it->second.by_watermark[w];
      if (index.empty()) continue;
      const int64_t value = partition.watermark(static_cast<Watermark>(w)).value();
      for (auto e = index.begin(); e != index.end() && e->first <= value; ++e) {
        ready.push_back(e->second);
      }
    }
    for (uint64_t id : ready) {
      if (waiters_.count(id)) fire.push_back(ClaimLocked(id));  // may watch twice
    }
  }
  Run(fire, WakeReason::kReady);
}

void Purgatory::OnStateChanged(Partition& partition) {
  std::vector<Claimed> fire;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = by_partition_.find(&partition);
    if (it == by_partition_.end()) return;
    std::vector<uint64_t> ids;
    for (const ThresholdIndex& index : it->second.by_watermark) {
      for (const auto& [threshold, id] : index) ids.push_back(id);
    }
    for (uint64_t id : ids) {
      if (waiters_.count(id)) fire.push_back(ClaimLocked(id));
    }
  }
  Run(fire, WakeReason::kReady);
}

void Purgatory::TimerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  std::vector<Claimed> fire;
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
    while (!by_deadline_.empty() && by_deadline_.begin()->first <= now) {
      fire.push_back(ClaimLocked(by_deadline_.begin()->second));
    }
    lock.unlock();
    Run(fire, WakeReason::kDeadline);
    lock.lock();
  }
}

void Purgatory::Shutdown() {
  std::vector<Claimed> fire;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    while (!waiters_.empty()) fire.push_back(ClaimLocked(waiters_.begin()->first));
  }
  timer_cv_.notify_all();
  if (timer_.joinable() && timer_.get_id() != std::this_thread::get_id()) timer_.join();
  Run(fire, WakeReason::kShutdown);
}

uint64_t Purgatory::timer_wakeups() const {
  std::lock_guard<std::mutex> lock(mu_);
  return timer_wakeups_;
}

size_t Purgatory::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waiters_.size();
}

}  // namespace headrace::broker
