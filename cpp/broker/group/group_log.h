// The coordinator's durable log: RecordBatch v2 batches (BuildBatch) whose
// records carry the keys and values of group_records.h, in one partition log
// at <data_dir>/__group_metadata/ (a name the topic registry never treats as
// a partition directory). Every change is appended; Rewrite() compacts the
// log to the live state, and the log is replayed from its start on open
// (docs/consumer-groups.md).
//
// Threading: not thread-safe; the coordinator serialises calls.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

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

  // Opens (creating if missing) the log under `data_dir`, recovering it.
  // `env` (null = the OS) must outlive the GroupLog.
  static Result<std::unique_ptr<GroupLog>> Open(const std::string& data_dir, bool fsync,
                                                int64_t segment_bytes, FileEnv* env = nullptr);

  // Appends `entries` as one batch (all or nothing). With `durable` and a log
  // opened with fsync, flushes before returning; otherwise the batch reaches
  // disk with the next durable append (one fsync covers the whole file) or
  // the OS's writeback. REQUIRES: !entries.empty().
  Status Append(const std::vector<Entry>& entries, bool durable = true);
  // Calls `fn` for every record from the start, in offset order.
  Status Replay(const std::function<void(const Entry&)>& fn) const;
  // Compaction: appends `live` (every record of the current state) in
  // batches, fsyncs, then moves the log start past all older records,
  // deleting the segments wholly below it. A crash in between leaves old and
  // new records, and replaying both yields the same state.
  Status Rewrite(const std::vector<Entry>& live);
  Status Close();

  int64_t size_bytes() const { return log_->size_bytes(); }

 private:
  GroupLog(std::unique_ptr<Log> log, bool fsync) : log_(std::move(log)), fsync_(fsync) {}
  std::unique_ptr<Log> log_;
  bool fsync_;
};

}  // namespace headrace::broker::group
