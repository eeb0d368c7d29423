// One segment of a log: the .log file of whole RecordBatch v2 batches that
// start at `base_offset`, and its offset and time indexes.
//
// Ownership: segments are held by shared_ptr; a FileSlice's keepalive is one,
// so the .log fd stays open until the last slice is gone even after
// retention renamed and unlinked the files.
//
// Every file operation goes through the FileEnv given to Create/Open, which
// must outlive the segment.
//
// Threading: the log's appender (one thread at a time, holding the log's
// append mutex) calls every non-const method; readers call the const ones
// concurrently. Invariant: bytes [0, size()) are whole batches already in
// the file, and index entries only point below size() (release/acquire).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>

#include "headrace/log.h"
#include "headrace/record_batch.h"
#include "headrace/status.h"
#include "log/file_reader.h"
#include "log/offset_index.h"
#include "log/time_index.h"

namespace headrace {

// What the segment needs to know about each appended batch.
struct BatchMeta {
  Offset last_offset;
  int64_t size = 0;
  TimestampMs max_timestamp;
};

// Outcome of scanning a segment's batches (recovery / index rebuild).
struct ScanOutcome {
  int64_t valid_size = 0;  // bytes of whole valid batches from position 0
  Offset next_offset;      // offset after the last valid batch
  std::string error;       // why the scan stopped before EOF ("" = clean)
};

class Segment {
 public:
  // Creates the files of a new, empty, active segment.
  // Errors: AlreadyExists when the .log file exists.
  static Result<std::shared_ptr<Segment>> Create(FileEnv* env, const std::string& dir,
                                                 Offset base, const LogConfig& config);
  // Opens an existing segment as found on disk (indexes are created empty if
  // missing: `indexes_were_missing()` tells). Nothing is validated here.
  static Result<std::shared_ptr<Segment>> Open(FileEnv* env, const std::string& dir,
                                               Offset base, const LogConfig& config);
  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  Offset base_offset() const { return base_; }
  int fd() const { return fd_; }
  int64_t size() const { return size_.load(std::memory_order_acquire); }
  // Largest batch max-timestamp and the last offset of the batch carrying it.
  std::pair<TimestampMs, Offset> max_timestamp() const;
  // Wall-clock ms of the first append (or of the first batch when opened);
  // -1 while empty. Drives segment.ms.
  int64_t rolling_base_ms() const { return rolling_base_ms_; }
  // Sets the rolling base to `now_ms` when the segment has data but no
  // usable first timestamp. Appender only.
  void EnsureRollingBase(int64_t now_ms) {
    if (size() > 0 && rolling_base_ms_ < 0) rolling_base_ms_ = now_ms;
  }
  const OffsetIndex& offset_index() const { return *offset_index_; }
  const TimeIndex& time_index() const { return *time_index_; }
  bool indexes_were_missing() const { return indexes_were_missing_; }
  bool indexes_full() const { return offset_index_->full() || time_index_->full(); }
  const std::string& log_path() const { return log_path_; }
  // A reader of the .log file's bytes [0, limit).
  FileReader Reader(int64_t limit, int64_t readahead) const {
    return FileReader(env_, fd_, limit, readahead);
  }
  // The .log file's size on disk (may exceed size() before recovery cuts).
  Result<int64_t> FileSize() const;
  // Wall-clock ms of the .log file's last modification.
  Result<int64_t> ModifiedMs() const;

  // Position of the first batch whose last offset is >= target, scanning
  // headers from the offset index hint, within [0, limit). Returns limit
  // when no batch qualifies. Errors: Corruption on an unreadable header.
  Result<int64_t> FindPosition(Offset target, int64_t limit, FileReader* reader) const;
  // The greatest batch boundary b with from <= b <= at_most (b = from when
  // the batch at `from` ends past at_most), scanning headers from the offset
  // index's nearest entry, within [0, limit). REQUIRES: `from` is a batch
  // boundary. Errors: Corruption on an unreadable header.
  Result<int64_t> LastBoundaryWithin(int64_t from, int64_t at_most, int64_t limit,
                                     FileReader* reader) const;

  // ---- appender side ----
  // Writes `bytes` (whole batches described by `metas`, in order) at the end
  // of the file in one write, indexes them and publishes the new size. On a
  // write or index error the file is cut back (best effort) and nothing is
  // published. `cache`: how the write treats the page cache (FileEnv).
  Status Append(std::span<const uint8_t> bytes, std::span<const BatchMeta> metas,
                int32_t index_interval, int64_t now_ms, WriteCache cache = WriteCache::kKeep);
  // Scans all batches from position 0, rebuilding both indexes and the max
  // timestamp; batches at positions >= verify_from are fully validated (CRC,
  // records), earlier ones by header (length, magic, contiguous offsets).
  // Stops at the first bad batch; publishes size = valid_size but does not
  // cut the file (see TruncateTo). IOError only when the OS fails.
  Result<ScanOutcome> ScanAndRebuild(int64_t verify_from, int32_t index_interval);
  // Loads state of a trusted segment from its indexes and file: size, max
  // timestamp from the time index, next offset by scanning headers after the
  // last offset index entry. Corruption when the indexes fail their checks.
  Result<Offset> LoadTrusted(int64_t offset_limit, int32_t index_interval);
  // Cuts the file to `size` bytes (a batch boundary) whose next offset is
  // `next_offset`, drops index entries past it, recomputes the max timestamp.
  Status TruncateTo(int64_t size, Offset next_offset);
  // Becoming inactive: final time index entry, indexes trimmed to size.
  Status Seal();
  // Becoming active again: indexes preallocated.
  Status Activate(bool preallocate);
  // fdatasync of the .log and both indexes.
  Status Sync();
  // fdatasync of the .log only: its records are durable; the indexes are
  // not (recovery rebuilds them for segments at or after the recovery
  // checkpoint, so a flush only needs Sync() before that checkpoint moves
  // past this segment: LogImpl::Flush).
  Status SyncData();
  // Renames the three files to *.deleted then unlinks them. The fd and the
  // mappings stay usable by holders of this object.
  Status DeleteFiles();

 private:
  Segment(FileEnv* env, std::string dir, Offset base)
      : env_(env), dir_(std::move(dir)), base_(base) {}
  Status OpenFiles(const LogConfig& config, bool create);
  Status IndexBatch(const BatchMeta& m, int64_t position, int32_t index_interval);
  void SetMaxTimestamp(TimestampMs ts, Offset offset);
  Status RecomputeMaxTimestamp();
  // The in-memory half of TruncateTo: size, index entries, max timestamp.
  Status ForgetFrom(int64_t size, Offset next_offset);

  FileEnv* const env_;
  std::string dir_;
  Offset base_;
  std::string log_path_;
  int fd_ = -1;
  std::unique_ptr<OffsetIndex> offset_index_;
  std::unique_ptr<TimeIndex> time_index_;
  bool indexes_were_missing_ = false;
  std::atomic<int64_t> size_{0};
  int64_t bytes_since_index_ = 0;  // appender only
  int64_t rolling_base_ms_ = -1;   // appender only
  mutable std::mutex ts_mu_;       // guards the pair below
  TimestampMs max_ts_ = kNoTimestamp;
  Offset max_ts_offset_;
};

}  // namespace headrace
