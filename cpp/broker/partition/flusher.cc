#include "broker/partition/flusher.h"

#include <pthread.h>

#include <algorithm>
#include <string>

namespace headrace::broker {
namespace {

uint64_t ElapsedNs(std::chrono::steady_clock::time_point start) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now() - start)
                                   .count());
}

}  // namespace

Flusher::Flusher(Options options)
    : options_(options),
      pool_([this] {
        std::vector<std::thread> pool;
        for (int i = 1; i < options_.threads; ++i) {
          pool.emplace_back([this, i] {
            const std::string name = "hr-flusher-" + std::to_string(i);
            pthread_setname_np(pthread_self(), name.c_str());
            PoolLoop();
          });
        }
        return pool;
      }()),
      thread_([this] {
        pthread_setname_np(pthread_self(), "hr-flusher");
        Loop();
      }) {}

Flusher::~Flusher() { Stop(); }

void Flusher::Schedule(std::shared_ptr<Partition> partition) {
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.scheduled;
  if (stopping_) return;
  pending_.push_back(std::move(partition));
  if (pending_.size() == 1) cv_.notify_one();
}

Status Flusher::FlushOne(Partition& partition) {
  const auto start = std::chrono::steady_clock::now();
  Status st = partition.FlushLog();  // a partition is scheduled once until FlushLog starts
  if (options_.fsync_latency) options_.fsync_latency->Record(ElapsedNs(start));
  return st;
}

uint64_t Flusher::FlushTaken(const std::vector<std::shared_ptr<Partition>>& batch) {
  uint64_t failures = 0;
  for (size_t i = next_.fetch_add(1, std::memory_order_relaxed); i < batch.size();
       i = next_.fetch_add(1, std::memory_order_relaxed)) {
    Status st = FlushOne(*batch[i]);
    if (!st.ok() && st.code() != StatusCode::kClosed) ++failures;
  }
  return failures;
}

uint64_t Flusher::RunRound(const std::vector<std::shared_ptr<Partition>>& batch) {
  {
    std::lock_guard<std::mutex> lock(round_mu_);
    next_.store(0, std::memory_order_relaxed);  // ordered before the pool's reads by round_mu_
    round_ = &batch;
    ++round_generation_;
    round_failures_ = 0;
  }
  // Wake no more pool threads than there are partitions left for them.
  const size_t helpers = std::min(pool_.size(), batch.size() - 1);
  if (helpers == pool_.size()) round_cv_.notify_all();
  else for (size_t i = 0; i < helpers; ++i) round_cv_.notify_one();
  uint64_t failures = FlushTaken(batch);
  std::unique_lock<std::mutex> lock(round_mu_);
  // Every partition is taken; wait for those taken by the pool.
  idle_cv_.wait(lock, [&] { return busy_ == 0; });
  round_ = nullptr;  // closed: a pool thread waking late does not join it
  return failures + round_failures_;
}

void Flusher::PoolLoop() {
  std::unique_lock<std::mutex> lock(round_mu_);
  uint64_t seen = 0;
  for (;;) {
    round_cv_.wait(lock, [&] {
      return pool_stopping_ || (round_ != nullptr && round_generation_ != seen);
    });
    if (pool_stopping_) return;  // rounds end before the pool stops (Stop)
    seen = round_generation_;
    const auto& batch = *round_;
    ++busy_;
    lock.unlock();
    const uint64_t failures = FlushTaken(batch);
    lock.lock();
    round_failures_ += failures;
    if (--busy_ == 0) idle_cv_.notify_one();
  }
}

void Flusher::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<Partition>> batch;
  for (;;) {
    cv_.wait(lock, [&] { return (stopping_ || !pending_.empty()) && !held_; });
    if (pending_.empty()) return;  // stopping and drained
    if (options_.linger.count() > 0 && !stopping_) {
      cv_.wait_for(lock, options_.linger, [&] { return stopping_; });
    }
    batch.swap(pending_);
    ++stats_.rounds;
    lock.unlock();
    uint64_t failures = 0;
    if (batch.size() == 1 || pool_.empty()) {
      next_.store(0, std::memory_order_relaxed);  // no pool thread reads it: no round open
      failures = FlushTaken(batch);
    } else {
      failures = RunRound(batch);
    }
    const uint64_t fsyncs = batch.size();
    batch.clear();  // drop references outside the lock
    lock.lock();
    stats_.fsyncs += fsyncs;
    stats_.failures += failures;
  }
}

void Flusher::Hold() {
  std::lock_guard<std::mutex> lock(mu_);
  held_ = true;
}

void Flusher::Release() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    held_ = false;
  }
  cv_.notify_all();
}

void Flusher::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    held_ = false;
  }
  cv_.notify_all();
  std::lock_guard<std::mutex> join_lock(join_mu_);
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
  {
    std::lock_guard<std::mutex> lock(round_mu_);
    pool_stopping_ = true;
  }
  round_cv_.notify_all();
  for (auto& t : pool_) {
    if (t.joinable() && t.get_id() != std::this_thread::get_id()) t.join();
  }
}

Flusher::Stats Flusher::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace headrace::broker
