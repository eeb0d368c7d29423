#include "broker/cluster/control_requests.h"

#include <utility>
#include <vector>

namespace headrace::broker {

void ControlRequests::Submit(std::string kind, std::string payload, Clock::time_point deadline,
                             Completion done) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopped_) {
      const uint64_t id = next_id_++;
      entries_.emplace(id, Entry{std::move(kind), std::move(payload), deadline, std::move(done)});
      untaken_.push_back(id);
      cv_.notify_one();
      return;
    }
  }
  done(false, "the broker is shutting down");
}

std::optional<ControlRequests::Taken> ControlRequests::Next(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return stopped_ || !untaken_.empty(); });
  while (!stopped_ && !untaken_.empty()) {
    const uint64_t id = untaken_.front();
    untaken_.pop_front();
    auto it = entries_.find(id);
    if (it == entries_.end()) continue;  // expired before it was taken
    return Taken{id, it->second.kind, it->second.payload};
  }
  return std::nullopt;
}

bool ControlRequests::Complete(uint64_t id, const std::string& result) {
  Completion done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return false;
    done = std::move(it->second.done);
    entries_.erase(it);
  }
  done(true, result);
  return true;
}

void ControlRequests::ExpireOverdue() {
  std::vector<Completion> overdue;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto now = Clock::now();
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (it->second.deadline <= now) {
        overdue.push_back(std::move(it->second.done));
        it = entries_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (Completion& done : overdue) done(false, "the cluster's control plane did not answer in time");
}

void ControlRequests::Shutdown() {
  std::vector<Completion> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    for (auto& [id, e] : entries_) all.push_back(std::move(e.done));
    entries_.clear();
    untaken_.clear();
  }
  cv_.notify_all();
  for (Completion& done : all) done(false, "the broker is shutting down");
}

size_t ControlRequests::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

}  // namespace headrace::broker
