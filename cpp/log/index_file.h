// A memory-mapped file of fixed-size entries: the storage under the offset
// and time indexes. The mapping is made once, at least max_bytes long, and
// never moved or shrunk while the object lives, so readers may search it
// while the appender appends, trims the file or regrows it underneath (only
// entries below entries() are ever read, and those lie inside the file).
//
// Threading: one writer (the log's appender) calls the mutators; any number
// of readers call entries() and entry(i). Invariant: every entry below
// entries() is fully written before entries() covers it (release/acquire).
//
// No file descriptor is held: the fd is closed once the file is mapped (the
// mapping keeps the file), resizing goes by path and syncing by msync. So a
// log partition holds one fd (its active .log) per segment, not three.
// Every file operation goes through the FileEnv given to Open, which must
// outlive the object.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "common/file_env.h"
#include "headrace/status.h"

namespace headrace {

class IndexFile {
 public:
  // Opens or creates `path`. entries() starts at file size / entry_size
  // (size_was_exact() tells whether the size was a whole number of entries).
  // The file itself is not resized here.
  static Result<std::unique_ptr<IndexFile>> Open(FileEnv* env, const std::string& path,
                                                 int entry_size, int64_t max_bytes);
  ~IndexFile();
  IndexFile(const IndexFile&) = delete;
  IndexFile& operator=(const IndexFile&) = delete;

  int entry_size() const { return entry_size_; }
  int64_t entries() const { return entries_.load(std::memory_order_acquire); }
  int64_t capacity() const { return capacity_; }
  bool full() const { return entries() >= capacity_; }
  bool size_was_exact() const { return size_was_exact_; }
  const std::string& path() const { return path_; }
  // REQUIRES: i < entries().
  const uint8_t* entry(int64_t i) const { return base_ + i * entry_size_; }

  // Writer side. REQUIRES: !full(). Grows the file when not preallocated,
  // and reserves disk blocks ahead of the entries (FileEnv::AllocatePath),
  // so a full disk is an error here (ENOSPC), never a SIGBUS on the store.
  Status Append(const uint8_t* entry);
  // Drops entries [n, entries()). REQUIRES: n <= entries().
  void TruncateEntries(int64_t n);
  // Sizes the file to its full capacity (an active segment's index).
  Status Preallocate();
  // Sizes the file to exactly entries() * entry_size (an inactive index).
  Status Trim();
  // Makes the used entries and the file size durable (msync MS_SYNC).
  Status Sync();
  // Renames the file (the mapping stays valid; later resizes use the new path).
  Status RenameTo(const std::string& new_path);

 private:
  IndexFile() = default;
  Status MapFile(int fd, int64_t max_bytes);
  Status ResizeFile(int64_t bytes);

  FileEnv* env_ = nullptr;
  std::string path_;
  int entry_size_ = 0;
  uint8_t* base_ = nullptr;
  int64_t mapped_bytes_ = 0;
  int64_t capacity_ = 0;
  int64_t file_bytes_ = 0;  // current file size; writer only
  // [0, allocated_bytes_) has disk blocks reserved by Append (writer only);
  // 0 after Open: a reopened file may be sparse anywhere.
  int64_t allocated_bytes_ = 0;
  bool size_was_exact_ = true;
  std::atomic<int64_t> entries_{0};
};

}  // namespace headrace
