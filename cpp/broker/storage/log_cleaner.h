// The broker's log cleaner threads (log.cleaner.threads): each one, in a
// loop, picks the dirtiest compacted partition nobody else is cleaning and
// runs one cleaning pass over it (Partition::Clean -> Log::Clean), or
// sleeps log.cleaner.backoff.ms when none needs it. A partition qualifies
// when its cleanup.policy contains compact and its cleanable dirty ratio is
// at least min.cleanable.dirty.ratio, or its oldest dirty data is older
// than max.compaction.lag.ms, or tombstones/markers of a clean segment
// passed delete.retention.ms. All threads share one I/O throttle
// (log.cleaner.io.max.bytes.per.second) and split the dedupe buffer.
// docs/compaction.md.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "broker/config/cleaner_config.h"
#include "broker/partition/partition.h"
#include "log/cleaner.h"

namespace headrace::broker {

struct CleanerStats {
  int64_t passes = 0;
  int64_t bytes_in = 0;           // segments replaced
  int64_t bytes_out = 0;          // segments written
  int64_t bytes_read = 0;
  int64_t records_removed = 0;
  int64_t errors = 0;
  int64_t busy_ms = 0;            // time spent in passes
};

class LogCleaner {
 public:
  using PartitionLister = std::function<std::vector<std::shared_ptr<Partition>>()>;
  using Clock = std::function<int64_t()>;  // wall clock ms

  LogCleaner(CleanerConfig config, PartitionLister lister, Clock clock = nullptr);
  ~LogCleaner();  // Stop()
  LogCleaner(const LogCleaner&) = delete;
  LogCleaner& operator=(const LogCleaner&) = delete;

  // Starts log.cleaner.threads threads (none when log.cleaner.enable=false).
  void Start();
  // Stops the threads; a running pass is abandoned (its .cleaned file is
  // removed, the log untouched). Idempotent.
  void Stop();
  // Picks the dirtiest qualifying partition and cleans it once on the
  // calling thread. Returns whether a pass ran (tests, benchmarks).
  bool CleanOnce();
  CleanerStats stats() const;

 private:
  void Loop();
  // The partition to clean next with its request filled; null when none.
  std::shared_ptr<Partition> Grab(CleanRequest* req);
  bool RunPass(const std::shared_ptr<Partition>& p, const CleanRequest& req);

  const CleanerConfig config_;
  const PartitionLister lister_;
  const Clock clock_;
  IoThrottler throttler_;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mu_;  // guards the fields below
  std::condition_variable cv_;
  std::set<const Partition*> in_progress_;
  CleanerStats stats_;
  std::vector<std::thread> threads_;
};

}  // namespace headrace::broker
