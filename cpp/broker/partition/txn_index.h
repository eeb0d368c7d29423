// A partition's aborted-transaction index, in Kafka's .txnindex format: one
// file per log segment, <dir>/<20-digit segment base offset>.txnindex,
// holding the transactions aborted by ABORT markers written in that segment,
// as 34-byte big-endian entries:
//
//   int16 version (0) | int64 producer id | int64 first offset |
//   int64 last offset (the marker's) | int64 last stable offset at the abort
//
// (docs/transactions.md, "On-disk formats"). The entries are kept in memory
// too; read_committed fetches ask Collect for the ones overlapping their
// range.
//
// Durability: Append only changes memory and marks the segment's file
// dirty; WriteTxnIndexFiles rewrites the dirty files atomically (temp
// file, fsync, rename, directory fsync). Partition::FlushLog writes them
// before it fsyncs the log and again right after (markers appended during
// the fsync), before it publishes the new flushed offset, so an entry is
// durable before the marker it describes is reported flushed. At open,
// entries at or past the log end (written ahead of a marker that recovery
// cut off) are dropped, and a marker that survived a crash without its
// entry is indexed again when the partition replays its log tail.
//
// Threading: not thread-safe; Partition guards it with its mutex. The file
// writes run without that mutex: TakeDirty copies what must be written
// (under the mutex) and WriteTxnIndexFiles writes it (on the flusher
// thread, serialised by the caller so that writes land in TakeDirty order).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "headrace/status.h"
#include "headrace/types.h"

namespace headrace {
class FileEnv;
}

namespace headrace::broker {

struct AbortedTxn {
  int64_t producer_id = -1;
  Offset first_offset{-1};
  Offset last_offset{-1};
  Offset last_stable_offset{-1};
  bool operator==(const AbortedTxn&) const = default;
};

inline constexpr int kAbortedTxnEntrySize = 34;

// Encoding of one file's entries (and back; Corruption for a size that is
// not a multiple of 34 or an unknown version).
std::string EncodeAbortedTxns(const std::vector<AbortedTxn>& entries);
Result<std::vector<AbortedTxn>> DecodeAbortedTxns(std::string_view bytes);

class AbortedTxnIndex {
 public:
  // `dir` "" keeps the index in memory only; `env` null = the OS.
  AbortedTxnIndex(std::string dir, FileEnv* env);

  // Loads every <base>.txnindex of the directory. A garbled file is logged
  // and ignored (its entries are indexed again by the log replay).
  Status Load();

  // Records `txn`, aborted by a marker in the segment based at
  // `segment_base`. An entry with the same last offset is not added twice.
  void Append(Offset segment_base, const AbortedTxn& txn);

  // Entries with last_offset >= from and first_offset < to, ordered by
  // first offset (Kafka's rule for a fetch of [from, to)).
  std::vector<AbortedTxn> Collect(Offset from, Offset to) const;

  // Forgets the files of segments based below `first_base` (retention and
  // DeleteRecords removed them); their files are deleted by the next Sync.
  void DropSegmentsBefore(Offset first_base);
  // Forgets every entry with last_offset >= `offset` and the files of
  // segments based at or after it (truncation).
  void TruncateFrom(Offset offset);
  // Forgets the entries with last_offset below `below` whose ABORT marker
  // (producer id, last offset) is not in `kept`: the log cleaner removed
  // those markers (docs/compaction.md). Returns how many went.
  size_t ForgetRemovedMarkers(Offset below, const std::vector<std::pair<int64_t, int64_t>>& kept);
  // Forgets everything (the log was truncated fully).
  void Clear();

  // What the files must become: the dirty segments' contents and the
  // dropped segments' files to delete. Clears the dirty marks.
  struct FileWrites {
    std::string dir;
    FileEnv* env = nullptr;
    std::vector<std::pair<Offset, std::string>> contents;  // segment base, bytes
    std::vector<Offset> removed;                            // segment bases
    bool empty() const { return contents.empty() && removed.empty(); }
  };
  FileWrites TakeDirty();
  bool dirty() const { return !dirty_.empty() || !dropped_.empty(); }

  size_t size() const;
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  FileEnv* env_;
  std::map<Offset, std::vector<AbortedTxn>> segments_;  // by segment base
  std::map<Offset, bool> dirty_;                         // segment bases to rewrite
  std::map<Offset, bool> dropped_;                       // segment bases to unlink
};

// Writes `w` durably: each file atomically (temp, fsync, rename, directory
// fsync), then deletes the removed ones (NotFound ignored). No-op for an
// in-memory index (dir ""). Errors: the FileEnv's.
Status WriteTxnIndexFiles(const AbortedTxnIndex::FileWrites& w);

}  // namespace headrace::broker
