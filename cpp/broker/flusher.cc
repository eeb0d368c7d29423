#include "broker/flusher.h"

#include <pthread.h>

namespace headrace::broker {
namespace {

uint64_t ElapsedNs(std::chrono::steady_clock::time_point start) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now() - start)
                                   .count());
}

}  // namespace

Flusher::Flusher(Options options) : options_(options), thread_([this] {
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
    for (const auto& p : batch) {
      const auto start = std::chrono::steady_clock::now();
      Status st = p->FlushLog();  // a partition is scheduled once until FlushLog starts
      if (options_.fsync_latency) options_.fsync_latency->Record(ElapsedNs(start));
      if (!st.ok() && st.code() != StatusCode::kClosed) ++failures;
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
}

Flusher::Stats Flusher::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace headrace::broker
