// Sparse time index of one segment. Entry (12 bytes, big-endian): timestamp
// int64 = the largest batch max-timestamp seen so far in the segment,
// relative offset int32 = last offset of the batch that first carried it -
// segment base. Timestamps strictly increase, offsets never decrease.
//
// Threading: as IndexFile (one writer, concurrent readers).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "headrace/status.h"
#include "headrace/types.h"
#include "log/index_file.h"

namespace headrace {

class TimeIndex {
 public:
  static constexpr int kEntrySize = 12;

  struct Entry {
    TimestampMs timestamp;
    Offset offset;  // absolute
  };

  static Result<std::unique_ptr<TimeIndex>> Open(FileEnv* env, const std::string& path,
                                                   Offset base, int64_t max_bytes);

  // The greatest entry with timestamp < ts (strictly), if any. Every batch
  // up to and including the one ending at that entry's offset has a max
  // timestamp below ts.
  std::optional<Entry> LookupBefore(TimestampMs ts) const;
  std::optional<Entry> Last() const;
  Entry EntryAt(int64_t i) const;
  int64_t entries() const { return file_->entries(); }
  bool full() const { return file_->full(); }

  // Writer side: appends when ts is above the last entry's timestamp.
  // REQUIRES: offset >= the last entry's offset, !full().
  Status MaybeAppend(TimestampMs ts, Offset offset);
  // Drops entries whose offset is >= end.
  void TruncateToOffset(Offset end);
  void Clear() { file_->TruncateEntries(0); }

  // OK when the file is a whole number of entries, timestamps strictly and
  // offsets weakly increasing, and relative offsets in [0, offset_limit).
  Status SanityCheck(int64_t offset_limit) const;

  IndexFile& file() { return *file_; }

 private:
  TimeIndex(std::unique_ptr<IndexFile> f, Offset base) : file_(std::move(f)), base_(base) {}
  std::unique_ptr<IndexFile> file_;
  Offset base_;
};

}  // namespace headrace
