#include "broker/flusher.h"

#include <unordered_map>

namespace headrace::broker {

Flusher::Flusher(Options options) : options_(options), thread_([this] {
      pthread_setname_np(pthread_self(), "hr-flusher");
      Loop();
    }) {}

Flusher::~Flusher() { Stop(); }

void Flusher::Request(std::shared_ptr<Partition> partition, Offset last_offset, Callback cb) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.requests;
    if (!stopping_ && partition->flushed_offset() <= last_offset) {
      pending_.push_back({std::move(partition), last_offset, std::move(cb)});
      if (pending_.size() == 1) cv_.notify_one();
      return;
    }
  }
  // Already durable, or stopped: answer on the caller's thread.
  bool flushed = partition->flushed_offset() > last_offset;
  cb(flushed ? Status::OK() : Status::Closed("flusher stopped"));
}

void Flusher::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
    if (pending_.empty()) return;  // stopping and drained
    if (options_.linger.count() > 0 && !stopping_) {
      cv_.wait_for(lock, options_.linger, [&] { return stopping_; });
    }
    std::vector<Pending> batch;
    batch.swap(pending_);
    ++stats_.rounds;
    lock.unlock();
    RunRound(std::move(batch));
    lock.lock();
  }
}

void Flusher::RunRound(std::vector<Pending> batch) {
  // One fsync per partition, however many requests wait on it.
  std::unordered_map<Partition*, Status> result;
  uint64_t fsyncs = 0;
  for (const Pending& p : batch) {
    Partition* part = p.partition.get();
    if (result.count(part)) continue;
    Offset highest = p.last_offset;
    for (const Pending& q : batch) {
      if (q.partition.get() == part) highest = std::max(highest, q.last_offset);
    }
    Status s;
    if (part->flushed_offset() <= highest) {
      s = part->Flush();
      ++fsyncs;
    }
    result.emplace(part, std::move(s));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.fsyncs += fsyncs;
  }
  for (Pending& p : batch) {
    Status s = result.at(p.partition.get());
    if (s.ok() && p.partition->flushed_offset() <= p.last_offset) {
      s = Status::IOError("flush of " + p.partition->topic_partition().ToString() +
                          " did not reach offset " + std::to_string(p.last_offset.value()));
    }
    p.cb(std::move(s));
  }
}

void Flusher::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
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
