// The share coordinator (KIP-932): owns the durable state of the
// share-partitions whose keys ("group:topicId:partition") hash to its
// partition of __share_group_state, and persists every change to its log
// before the change may be answered. The share-partition leaders
// (api/share_state.h) read a share-partition's state when they create it,
// initialize it when there is none, and write a snapshot after each
// acknowledgement; the acknowledgement is answered once that snapshot is
// committed. docs/share-groups.md ("Durable share state").
//
// Log: single node, <data_dir>/__share_group_state (a name the topic
// registry never takes for a partition directory); cluster mode, the local
// leader replica of one partition of __share_group_state. Records:
// share_state_records.h (Kafka's ShareSnapshot key and value), one per
// change, compacted to the live state once as much again as the live state
// (at least a segment) was appended. Replayed on open.
//
// Durability: Write/Initialize/Delete append and return the log end offset
// the change ends at; the change is durable once log_partition()'s high
// watermark reaches it (the flusher moves it; with
// headrace.offsets.commit.fsync only past fsynced records). Callers wait
// for that in the purgatory (no fsync on the caller's thread).
//
// Threading: thread-safe; one mutex guards the state and the log.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "broker/base/kafka_error.h"
#include "broker/coordinator/base/group_log.h"
#include "broker/coordinator/share/share_state_records.h"
#include "broker/partition/partition.h"

namespace headrace::broker::share {

inline constexpr const char* kShareStateLogDirName = "__share_group_state";

// What a change left to wait for: `end` is the log end offset after it
// (committed once log_partition()'s high watermark reaches it). `error`:
// NOT_COORDINATOR (stopped, or the append failed), FENCED_STATE_EPOCH,
// FENCED_LEADER_EPOCH, INVALID_REQUEST (Write with `require_initialized`
// of a key never initialized); `end` is meaningless then.
struct SharePersisted {
  KafkaError error = KafkaError::kNone;
  int64_t end = 0;
};

class ShareCoordinator {
 public:
  struct Options {
    std::string data_dir;     // single node: the log is data_dir/__share_group_state
    FileEnv* env = nullptr;   // the log's I/O seam (null = the OS)
    PartitionServices log_services;
    int64_t segment_bytes = 64 << 20;
    // Cluster mode: the local leader replica of its __share_group_state
    // partition.
    std::shared_ptr<Partition> log_partition;
  };

  static Result<std::shared_ptr<ShareCoordinator>> Open(Options options);
  ~ShareCoordinator();

  // ReadShareGroupState: the stored state of `key`, or nullopt (never
  // initialized, or deleted).
  std::optional<ShareState> Read(const SharePartitionKey& key) const;
  // Every stored state of `group` (DescribeShareGroupOffsets).
  std::vector<std::pair<SharePartitionKey, ShareState>> StatesOf(const std::string& group) const;

  // InitializeShareGroupState: `key` starts over at `start_offset` with no
  // batches and `state_epoch`. FENCED_STATE_EPOCH when the stored state's
  // epoch is not below `state_epoch`.
  SharePersisted Initialize(const SharePartitionKey& key, int32_t state_epoch,
                            int64_t start_offset, int32_t leader_epoch);
  // WriteShareGroupState: merges `write` (its start offset, -1 = keep; its
  // batches laid over the stored ones: MergeStateBatches) into the stored
  // state. FENCED_STATE_EPOCH when `write.state_epoch` differs from the
  // stored one, FENCED_LEADER_EPOCH when `write.leader_epoch` is below it;
  // a key never initialized is initialized by its first write, unless
  // `require_initialized` (the WriteShareGroupState RPC, as Kafka: then
  // INVALID_REQUEST and nothing is written).
  SharePersisted Write(const SharePartitionKey& key, const ShareState& write,
                       bool require_initialized = false);
  // DeleteShareGroupState of every share-partition of `group` (DeleteGroups).
  SharePersisted DeleteGroup(const std::string& group);
  // DeleteShareGroupState of `keys`: one batch of tombstones for those that
  // are stored (none stored: nothing to wait for, `end` is the log end).
  SharePersisted Delete(const std::vector<SharePartitionKey>& keys);

  void Tick() {}  // the router's timer: nothing is due by time
  // Later calls answer NOT_COORDINATOR. Idempotent.
  void Stop();

  const std::shared_ptr<Partition>& log_partition() const { return log_partition_; }
  size_t size() const;

 private:
  ShareCoordinator() = default;
  Status Load();
  // REQUIRES: mu_. Appends `entries` as one batch (none: nothing to wait
  // for) and returns the log end after them.
  SharePersisted AppendLocked(const std::vector<group::GroupLog::Entry>& entries);
  void MaybeCompactLocked();

  int64_t segment_bytes_ = 64 << 20;
  bool attached_ = false;
  std::shared_ptr<Partition> log_partition_;
  mutable std::mutex mu_;
  std::unique_ptr<group::GroupLog> log_;              // guarded by mu_; null once stopped
  std::map<SharePartitionKey, ShareState> states_;    // guarded by mu_
  int64_t appended_since_compaction_ = 0;             // guarded by mu_
  int64_t next_compaction_bytes_ = 0;                 // guarded by mu_
};

}  // namespace headrace::broker::share
