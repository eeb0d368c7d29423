// The flusher: the threads that fsync partition logs. Partitions ask for an
// fsync through FlushScheduler::Schedule (after an append when
// headrace.acks.all.fsync makes fsyncing part of committing, or when
// flush.messages / flush.ms say so); the flusher thread repeatedly takes
// every scheduled partition (a round) and calls Partition::FlushLog on each,
// which publishes the new flushed offset and high watermark — and so,
// through the purgatory, completes acks=all produces and long-poll fetches.
// Appends that arrive while an fsync runs reschedule their partition for the
// next round, so N concurrent acks=all produces to one partition cost about
// two fsyncs, not N (group commit). docs/durability.md describes the policy.
//
// Concurrency (headrace.flush.threads = Options::threads): the partitions of
// one round are fsynced by up to `threads` threads at once — the flusher
// thread and threads-1 pool threads created with the Flusher, which take the
// round's partitions from a shared index. A round of one partition (or
// threads = 1) runs inline on the flusher thread. A round ends when all its
// partitions are flushed and the next starts only then; a partition is in a
// round at most once (it is scheduled at most once until its FlushLog
// starts), so a partition is never in two FlushLogs at a time.
//
// Threading: Schedule from any thread; FlushLog runs only on the flusher
// thread ("hr-flusher") and its pool ("hr-flusher-N"), with no flusher lock
// held.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "broker/partition/partition.h"
#include "common/metrics.h"

namespace headrace::broker {

class Flusher final : public FlushScheduler {
 public:
  struct Options {
    // After the first partition of a round is scheduled, wait this long for
    // more before fsyncing (0 = fsync at once; batching then comes from
    // appends arriving during the previous fsync).
    std::chrono::microseconds linger{0};
    // How many partitions of a round are fsynced at once (>= 1; 1 = one
    // after another on the flusher thread).
    int threads = 1;
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
  // Flushes what is scheduled, then stops the threads. Idempotent.
  void Stop();
  // Tests: while held, no new round starts (scheduled partitions wait);
  // Release lets it go on.
  void Hold();
  void Release();
  Stats stats() const;

 private:
  void Loop();
  // The flusher thread's side of a round of several partitions: hands it to
  // the pool, flushes with it, returns once every partition is flushed.
  uint64_t RunRound(const std::vector<std::shared_ptr<Partition>>& batch);
  void PoolLoop();
  // Flushes the round's partitions not yet taken, one at a time; returns the
  // failures.
  uint64_t FlushTaken(const std::vector<std::shared_ptr<Partition>>& batch);
  Status FlushOne(Partition& partition);

  const Options options_;
  mutable std::mutex mu_;  // guards pending_, stopping_, held_, stats_
  std::condition_variable cv_;
  std::vector<std::shared_ptr<Partition>> pending_;
  bool stopping_ = false;
  bool held_ = false;
  Stats stats_;

  // The round the pool works on. The flusher thread opens it (round_ set,
  // generation bumped), pool threads join it only while it is open, and the
  // flusher thread closes it once every partition is taken and no pool
  // thread is in it (busy_ == 0).
  std::mutex round_mu_;  // guards the four below
  std::condition_variable round_cv_;  // a round opened, or the pool stops
  std::condition_variable idle_cv_;   // busy_ fell to 0
  const std::vector<std::shared_ptr<Partition>>* round_ = nullptr;  // null: closed
  uint64_t round_generation_ = 0;
  int busy_ = 0;              // pool threads inside the open round
  uint64_t round_failures_ = 0;
  bool pool_stopping_ = false;
  std::atomic<size_t> next_{0};  // the round's next partition to take

  std::mutex join_mu_;  // serialises joining the threads (Stop from several threads)
  // Started after the members above exist; the pool before the flusher
  // thread, which reads pool_.size(). Neither changes until Stop.
  std::vector<std::thread> pool_;
  std::thread thread_;
};

}  // namespace headrace::broker
