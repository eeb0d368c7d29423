// Sparse offset index of one segment: maps offsets to byte positions in the
// segment's .log file. Entry (8 bytes, big-endian): relative offset int32 =
// last offset of a batch - segment base, position int32 = where that batch
// starts. Entries are strictly increasing in both fields.
//
// Threading: as IndexFile (one writer, concurrent readers).
#pragma once

#include <memory>
#include <string>

#include "headrace/status.h"
#include "headrace/types.h"
#include "log/index_file.h"

namespace headrace {

class OffsetIndex {
 public:
  static constexpr int kEntrySize = 8;

  struct Entry {
    Offset offset;          // absolute (base + relative)
    FilePosition position;
  };

  static Result<std::unique_ptr<OffsetIndex>> Open(FileEnv* env, const std::string& path,
                                                   Offset base, int64_t max_bytes);

  // The greatest entry with offset <= target and position < limit, or
  // {base, 0} if none. (A reader passes the segment size it loaded, as the
  // appender may index a batch before the reader sees it.)
  Entry Lookup(Offset target, FilePosition limit = FilePosition::max()) const;
  // The greatest entry with position <= at_most, or {base, 0} if none.
  Entry LookupPosition(FilePosition at_most) const;
  Entry EntryAt(int64_t i) const;
  int64_t entries() const { return file_->entries(); }
  bool full() const { return file_->full(); }

  // Writer side. REQUIRES: offset/position above the last entry's, !full().
  Status Append(Offset batch_last_offset, FilePosition batch_position);
  // Drops the entries whose position is >= `log_size`.
  void TruncateToPosition(FilePosition log_size);
  void Clear() { file_->TruncateEntries(0); }

  // OK when the file is a whole number of entries, strictly increasing,
  // every position < log_size and every relative offset < offset_limit
  // (exclusive bound; pass INT32_MAX when unknown). Else Corruption.
  Status SanityCheck(int64_t log_size, int64_t offset_limit) const;

  IndexFile& file() { return *file_; }

 private:
  OffsetIndex(std::unique_ptr<IndexFile> f, Offset base) : file_(std::move(f)), base_(base) {}
  std::unique_ptr<IndexFile> file_;
  Offset base_;
};

}  // namespace headrace
