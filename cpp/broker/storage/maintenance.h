// The background maintenance thread: every log.flush.scheduler.interval.ms
// it rolls segments older than segment.ms (MaybeRoll) and asks the flusher
// to fsync logs whose flush.ms / flush.messages policy is due
// (MaybeScheduleFlush); every
// log.retention.check.interval.ms it also applies retention (retention.ms,
// retention.bytes) to partitions whose cleanup.policy includes delete, and
// forgets producers idle for producer.id.expiration.ms. In cluster mode,
// every replica.high.watermark.checkpoint.interval.ms it also runs the
// high-watermark checkpoint (Options::checkpoint_hw; hw_checkpoint.h).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "broker/partition/partition.h"

namespace headrace::broker {

struct MaintenanceReport {
  int partitions = 0;
  int segments_deleted = 0;
  int64_t bytes_deleted = 0;
  int64_t producers_expired = 0;
  int errors = 0;
  std::string first_error;  // "" when errors == 0
};

class Maintenance {
 public:
  using PartitionLister = std::function<std::vector<std::shared_ptr<Partition>>()>;
  using Clock = std::function<TimestampMs()>;  // wall clock in ms
  struct Options {
    int64_t tick_ms = 1000;                // log.flush.scheduler.interval.ms
    int64_t retention_check_ms = 300000;   // log.retention.check.interval.ms
    int64_t producer_id_expiration_ms = 86400000;  // producer.id.expiration.ms
    // replica.high.watermark.checkpoint.interval.ms: how often the thread
    // calls checkpoint_hw (empty: never; a single node). Its error is
    // logged once per distinct message.
    int64_t hw_checkpoint_ms = 5000;
    std::function<Status()> checkpoint_hw;
  };

  // One pass over `partitions` at time `now` (also what the thread runs).
  // With `apply_retention`, also removes producers idle for
  // `producer_expiration_ms` (-1: never).
  static MaintenanceReport RunOnce(const std::vector<std::shared_ptr<Partition>>& partitions,
                                   TimestampMs now, bool apply_retention,
                                   int64_t producer_expiration_ms = -1);
  static TimestampMs WallClockMs();

  // `lister` is called once per tick (e.g. TopicRegistry::AllPartitions).
  Maintenance(Options options, PartitionLister lister, Clock clock = WallClockMs);
  ~Maintenance();  // Stop()
  Maintenance(const Maintenance&) = delete;
  Maintenance& operator=(const Maintenance&) = delete;

  void Start();
  void Stop();  // idempotent; waits for a running pass to finish
  int passes() const;
  MaintenanceReport last_report() const;

 private:
  void Loop();

  const Options options_;
  const PartitionLister lister_;
  const Clock clock_;
  mutable std::mutex mu_;  // guards the fields below
  std::condition_variable cv_;
  bool stopping_ = false;
  int passes_ = 0;
  MaintenanceReport last_;
  std::mutex join_mu_;
  std::thread thread_;
};

}  // namespace headrace::broker
