// The flusher: the one thread that fsyncs partition logs. Partitions ask
// for an fsync through FlushScheduler::Schedule (after an append when
// headrace.acks.all.fsync makes fsyncing part of committing, or when
// flush.messages / flush.ms say so); the thread repeatedly takes every
// scheduled partition and calls Partition::FlushLog, which publishes the
// new flushed offset and high watermark — and so, through the purgatory,
// completes acks=all produces and long-poll fetches. Appends that arrive
// while an fsync runs reschedule their partition for the next round, so N
// concurrent acks=all produces to one partition cost about two fsyncs, not
// N (group commit). docs/durability.md describes the policy.
//
// Threading: Schedule from any thread; FlushLog runs only on the flusher
// thread ("hr-flusher"), with no flusher lock held.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "broker/partition.h"
#include "common/metrics.h"

namespace headrace::broker {

class Flusher final : public FlushScheduler {
 public:
  struct Options {
    // After the first partition of a round is scheduled, wait this long for
    // more before fsyncing (0 = fsync at once; batching then comes from
    // appends arriving during the previous fsync).
    std::chrono::microseconds linger{0};
    // Each FlushLog's duration in ns (docs/metrics.md); null: not recorded.
    metrics::Histogram* fsync_latency = nullptr;
  };
  struct Stats {
    uint64_t scheduled = 0;  // Schedule calls
    uint64_t rounds = 0;     // passes of the flusher thread that did work
    uint64_t fsyncs = 0;     // Partition::FlushLog calls made
    uint64_t failures = 0;   // of which failed
  };

  explicit Flusher(Options options);
  Flusher() : Flusher(Options{}) {}
  ~Flusher() override;  // Stop()
  Flusher(const Flusher&) = delete;
  Flusher& operator=(const Flusher&) = delete;

  // FlushScheduler. After Stop() the partition is not flushed here (its
  // Close flushes it).
  void Schedule(std::shared_ptr<Partition> partition) override;
  // Flushes what is scheduled, then stops the thread. Idempotent.
  void Stop();
  // Tests: while held, the thread flushes nothing (scheduled partitions
  // wait); Release lets it go on.
  void Hold();
  void Release();
  Stats stats() const;

 private:
  void Loop();

  const Options options_;
  mutable std::mutex mu_;  // guards pending_, stopping_, held_, stats_
  std::condition_variable cv_;
  std::vector<std::shared_ptr<Partition>> pending_;
  bool stopping_ = false;
  bool held_ = false;
  Stats stats_;
  std::mutex join_mu_;  // serialises joining thread_ (Stop from several threads)
  std::thread thread_;  // last: started after the members above exist
};

}  // namespace headrace::broker
