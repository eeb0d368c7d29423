// The group coordinators of this broker: one GroupCoordinator per partition
// of __consumer_offsets this broker leads (cluster mode), or the single one
// on data_dir/__group_metadata (single node: one partition). Every group API
// asks For(group_id) and gets the coordinator of the group's partition
// (group_partition.h) or the error to answer: NOT_COORDINATOR when another
// broker coordinates it (cluster mode; the client looks again), or
// COORDINATOR_NOT_AVAILABLE when the topic does not exist yet, the broker
// is stopping, or on a single node while it has no coordinator.
//
// Cheap per partition: cluster-mode coordinators are opened without their
// own timer thread; this router's one timer ticks all of them.
//
// Threading: every method may be called from any thread; lookups take one
// short mutex and hand out shared_ptr snapshots.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include "broker/group/group_coordinator.h"
#include "broker/kafka_error.h"

namespace headrace::broker::group {

struct CoordinatorLookup {
  std::shared_ptr<GroupCoordinator> coordinator;  // null: `error` says why
  KafkaError error = KafkaError::kNone;
  int32_t partition = -1;  // the group's partition (-1: no partitions yet)
};

class GroupCoordinators {
 public:
  // `elsewhere`: the answer for a group whose partition this broker does
  // not coordinate (cluster mode NOT_COORDINATOR, single node
  // COORDINATOR_NOT_AVAILABLE).
  explicit GroupCoordinators(KafkaError elsewhere) : elsewhere_(elsewhere) {}
  ~GroupCoordinators();  // StopTimer(); does not stop the coordinators
  GroupCoordinators(const GroupCoordinators&) = delete;
  GroupCoordinators& operator=(const GroupCoordinators&) = delete;

  // The partition count of __consumer_offsets (0: it does not exist yet).
  void SetPartitionCount(int32_t n);
  int32_t partition_count() const;
  // The group's partition, -1 while there are none.
  int32_t PartitionFor(std::string_view group_id) const;

  CoordinatorLookup For(std::string_view group_id) const;
  // The coordinator of `partition` here, or null.
  std::shared_ptr<GroupCoordinator> ForPartition(int32_t partition) const;
  // Every coordinator here, by partition.
  std::map<int32_t, std::shared_ptr<GroupCoordinator>> All() const;

  // Publishes `c` as the coordinator of `partition` (null: none).
  void Set(int32_t partition, std::shared_ptr<GroupCoordinator> c);
  // Removes and returns the coordinator of `partition` (null if none); the
  // caller stops it.
  std::shared_ptr<GroupCoordinator> Take(int32_t partition);
  // Take, then stop what was taken (outside the router's lock); no-op when
  // `partition` has none.
  void Stop(int32_t partition);

  // Starts the one thread that calls Tick() on every coordinator every
  // `interval_ms` (coordinators opened with start_timer = false). Once.
  void StartTimer(int64_t interval_ms);
  void StopTimer();  // idempotent

 private:
  void TimerLoop(int64_t interval_ms);

  const KafkaError elsewhere_;
  mutable std::mutex mu_;
  int32_t partitions_ = 0;                                   // guarded by mu_
  std::map<int32_t, std::shared_ptr<GroupCoordinator>> by_partition_;  // guarded by mu_
  bool timer_stopped_ = false;                               // guarded by mu_
  std::condition_variable timer_cv_;
  std::thread timer_;
};

}  // namespace headrace::broker::group
