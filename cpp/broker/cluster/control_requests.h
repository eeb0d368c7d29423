// ControlRequests: admin work the data plane hands to the control plane
// (docs/cluster.md): CreateTopics, DeleteTopics, CreatePartitions and
// auto-creation need ZooKeeper, which only the control plane talks to.
// A handler Submits (kind, payload JSON, completion); the control plane's
// thread takes requests with Next (blocking, GIL released in the binding)
// and answers each with Complete. Every submitted request completes exactly
// once: with the control plane's result, or with an error result when it is
// not answered in time (ExpireOlderThan) or at Shutdown.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace headrace::broker {

class ControlRequests {
 public:
  using Clock = std::chrono::steady_clock;
  // ok=false: not answered (timeout or shutdown); `result` then says why.
  using Completion = std::function<void(bool ok, const std::string& result)>;

  struct Taken {
    uint64_t id;
    std::string kind;
    std::string payload;
  };

  // Queues a request; `done` runs on the thread that completes it.
  void Submit(std::string kind, std::string payload, Clock::time_point deadline, Completion done);
  // The next request not yet taken, waiting up to `timeout`; nullopt if none
  // came or after Shutdown.
  std::optional<Taken> Next(std::chrono::milliseconds timeout);
  // Answers request `id`; false if it is unknown (already expired).
  bool Complete(uint64_t id, const std::string& result);
  // Completes (ok=false) every request whose deadline passed.
  void ExpireOverdue();
  // Completes every request (ok=false); later Submits complete at once.
  void Shutdown();
  size_t pending() const;

 private:
  struct Entry {
    std::string kind;
    std::string payload;
    Clock::time_point deadline;
    Completion done;
  };
  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t next_id_ = 1;
  std::map<uint64_t, Entry> entries_;  // submitted, not completed
  std::deque<uint64_t> untaken_;       // submitted, not yet handed out by Next
  bool stopped_ = false;
};

}  // namespace headrace::broker
