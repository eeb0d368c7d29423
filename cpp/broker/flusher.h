// Group commit for acks=all: a produce whose answer must wait until its
// batch is fsynced registers (partition, last offset, callback) here. One
// flusher thread repeatedly takes every pending request, fsyncs each dirty
// partition once (Partition::Flush), and fires the callbacks whose offsets
// are now below the partition's flushed offset. Requests that arrive while
// an fsync runs wait for the next round, so N concurrent acks=all produces
// to one partition cost about two fsyncs, not N. docs/configuration.md
// describes the policy.
//
// Contract: each callback runs exactly once: Status OK once every offset
// <= last_offset is flushed; the fsync's error if it failed; Closed if the
// flusher stopped first. It runs on the flusher thread (or on the caller of
// Request when already flushed / stopped), with no lock held.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "broker/partition.h"

namespace headrace::broker {

class Flusher {
 public:
  using Callback = std::function<void(Status)>;
  struct Options {
    // After the first request of a round arrives, wait this long for more
    // before fsyncing (0 = fsync at once; batching then comes from requests
    // arriving during the previous fsync).
    std::chrono::microseconds linger{0};
  };
  struct Stats {
    uint64_t requests = 0;  // Request calls
    uint64_t rounds = 0;    // passes of the flusher thread that did work
    uint64_t fsyncs = 0;    // Partition::Flush calls made
  };

  explicit Flusher(Options options);
  Flusher() : Flusher(Options{}) {}
  ~Flusher();  // Stop()
  Flusher(const Flusher&) = delete;
  Flusher& operator=(const Flusher&) = delete;

  // Calls `cb` once offsets <= `last_offset` of `partition` are fsynced.
  void Request(std::shared_ptr<Partition> partition, Offset last_offset, Callback cb);
  // Flushes and answers what is pending, then stops the thread; later
  // requests get Closed at once. Idempotent.
  void Stop();
  Stats stats() const;

 private:
  struct Pending {
    std::shared_ptr<Partition> partition;
    Offset last_offset;
    Callback cb;
  };
  void Loop();
  // Flushes each partition of `batch` at most once and fires the callbacks.
  void RunRound(std::vector<Pending> batch);

  const Options options_;
  mutable std::mutex mu_;  // guards pending_, stopping_, stats_
  std::condition_variable cv_;
  std::vector<Pending> pending_;
  bool stopping_ = false;
  Stats stats_;
  std::mutex join_mu_;  // serialises joining thread_ (Stop from several threads)
  std::thread thread_;  // last: started after the members above exist
};

}  // namespace headrace::broker
