// The leader-epoch cache of one partition: for each leader epoch that wrote
// to the log, the first offset it wrote (KIP-101). Persisted as Kafka does,
// in <partition dir>/leader-epoch-checkpoint (docs/log-format.md):
//
//   0                  version
//   2                  number of entries
//   0 0                epoch start_offset, ascending in both
//   3 150
//
// It answers OffsetForLeaderEpoch (the end offset of an epoch = the start of
// the next larger epoch, or the log end for the latest one) and drives a
// follower's truncation after a leader change (KIP-101, KIP-279).
//
// Invariant: entries are strictly increasing in epoch and non-decreasing in
// start offset; every start offset is <= the log end offset.
// Threading: not thread-safe; the owning Partition serialises access.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/file_env.h"
#include "headrace/status.h"
#include "headrace/types.h"

namespace headrace::broker {

inline constexpr int32_t kUndefinedEpoch = -1;
inline constexpr int64_t kUndefinedEpochOffset = -1;

struct EpochEntry {
  LeaderEpoch epoch;
  Offset start_offset;
  bool operator==(const EpochEntry&) const = default;
};

// What OffsetForLeaderEpoch answers: the largest epoch <= the requested one
// and where it ended; {-1, -1} when the cache knows no such epoch.
struct EpochEndOffset {
  LeaderEpoch epoch{kUndefinedEpoch};
  Offset end_offset{kUndefinedEpochOffset};
  bool operator==(const EpochEndOffset&) const = default;
};

class LeaderEpochCache {
 public:
  static constexpr const char* kFileName = "leader-epoch-checkpoint";

  // An empty cache persisted in `dir` ("" = never persisted: tests) through
  // `env` (null = the OS; must outlive the cache).
  explicit LeaderEpochCache(std::string dir, FileEnv* env = nullptr)
      : dir_(std::move(dir)), env_(env ? env : FileEnv::Default()) {}

  // Reads <dir>/leader-epoch-checkpoint. Returns false (cache left empty)
  // when the file does not exist. Errors: Corruption for a garbled file,
  // IOError when unreadable.
  Result<bool> Load();

  // Records that `epoch` starts writing at `start_offset`. Ignored when the
  // latest entry already has this epoch; an entry with a smaller epoch but a
  // start offset >= `start_offset`, or a larger epoch, is removed first (a
  // stale tail).
  Status Assign(LeaderEpoch epoch, Offset start_offset);

  // KIP-101/279: the end offset of `requested` as seen with log end `leo`.
  EpochEndOffset EndOffsetFor(LeaderEpoch requested, Offset leo) const;

  // Removes entries starting at or after `end` (the log was truncated to
  // `end`).
  Status TruncateFromEnd(Offset end);
  // The log start moved to `start`: entries wholly below it are dropped and
  // the first one kept is moved up to `start`.
  Status TruncateFromStart(Offset start);

  // Writes the file (atomically, fsynced) if anything changed since the
  // last write: TakeDirtyFile() then WriteFile(). The owner does this before
  // it fsyncs the log, so the file is durable before the data it describes,
  // and may call WriteFile without its lock (it only reads the directory
  // and env, fixed at construction). A lost file is rebuilt from the
  // batches' epochs (Partition).
  Status Flush();
  // The file's contents if anything changed since the last take; clears the
  // change.
  std::optional<std::string> TakeDirtyFile();
  Status WriteFile(const std::string& contents) const;
  bool dirty() const { return dirty_; }

  // The latest epoch, or -1 when empty.
  LeaderEpoch latest_epoch() const {
    return entries_.empty() ? LeaderEpoch(kUndefinedEpoch) : entries_.back().epoch;
  }
  const std::vector<EpochEntry>& entries() const { return entries_; }

  // Replaces every entry (recovery when the file was missing).
  void Reset(std::vector<EpochEntry> entries);

 private:
  std::string dir_;
  FileEnv* env_;
  std::vector<EpochEntry> entries_;
  bool dirty_ = false;
};

}  // namespace headrace::broker
