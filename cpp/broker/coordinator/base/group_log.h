// The coordinator's durable log: RecordBatch v2 batches (BuildBatch) whose
// records carry the keys and values of its coordinator (group_records.h,
// txn_metadata.h), in one partition log
// at <data_dir>/__group_metadata/ (a name the topic registry never treats as
// a partition directory). Every change is appended; Rewrite() compacts the
// log to the live state, and the log is replayed from its start on open
// (docs/consumer-groups.md).
//
// The log is a Partition (partition.h): appends never fsync on the caller's
// thread; the flusher fsyncs it and moves its high watermark (with
// headrace.offsets.commit.fsync the HW only covers fsynced records), and a
// request that must be durable waits in the purgatory for
// partition()->high_watermark() to pass log_end_offset() read after its
// append.
//
// Threading: not thread-safe; the coordinator serialises calls.
// partition() may be watched from any thread.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "broker/partition/partition.h"
#include "headrace/log.h"
#include "headrace/status.h"

namespace headrace::broker::group {

inline constexpr const char* kGroupLogDirName = "__group_metadata";

class GroupLog {
 public:
  struct Entry {
    std::string key;
    std::optional<std::string> value;  // nullopt = tombstone
  };

  // Opens (creating if missing) the log in `data_dir`/`dir_name`,
  // recovering it. `services.commit_requires_fsync` is
  // headrace.offsets.commit.fsync; `env` (null = the OS) must outlive the
  // GroupLog. The transaction coordinator keeps its log the same way
  // (coordinator/txn/txn_coordinator.h), under another `dir_name`.
  static Result<std::unique_ptr<GroupLog>> Open(const std::string& data_dir,
                                                const PartitionServices& services,
                                                int64_t segment_bytes, FileEnv* env = nullptr,
                                                const char* dir_name = kGroupLogDirName);

  // Cluster mode: the log is the local replica of __consumer_offsets-0,
  // owned by the topic registry (it is replicated like any partition);
  // Close() leaves it open.
  static std::unique_ptr<GroupLog> Attach(std::shared_ptr<Partition> partition) {
    auto log = std::unique_ptr<GroupLog>(new GroupLog(std::move(partition)));
    log->owned_ = false;
    return log;
  }

  // Appends `entries` as one batch (all or nothing); the flusher makes it
  // durable (see above). REQUIRES: !entries.empty().
  Status Append(const std::vector<Entry>& entries);
  // Calls `fn` for every record from the start to the log end (not the HW),
  // in offset order.
  Status Replay(const std::function<void(const Entry&)>& fn) const;
  // Compaction: appends `live` (every record of the current state) in
  // batches and asks the flusher for an fsync; once that copy is flushed
  // (checked by later appends and by FinishRewrite), the log start moves
  // past all older records, deleting the segments wholly below it. A crash
  // in between leaves old and new records, and replaying both yields the
  // same state.
  Status Rewrite(const std::vector<Entry>& live);
  // Completes a pending Rewrite whose copy is flushed. Cheap otherwise.
  Status FinishRewrite();
  Status Close();

  int64_t size_bytes() const { return partition_->size_bytes(); }
  const std::shared_ptr<Partition>& partition() const { return partition_; }

 private:
  explicit GroupLog(std::shared_ptr<Partition> partition) : partition_(std::move(partition)) {}
  std::shared_ptr<Partition> partition_;
  bool owned_ = true;  // Close() closes the partition
  // A Rewrite's copy occupies [rewrite_start_, rewrite_end_); older records
  // are dropped once the flushed offset reaches rewrite_end_. -1: none.
  Offset rewrite_start_{-1};
  Offset rewrite_end_{-1};
};

}  // namespace headrace::broker::group
