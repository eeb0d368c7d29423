// A partition's log: a directory of segments named by base offset.
//
//   <dir>/<20-digit base offset>.log        RecordBatch v2 bytes, as on the wire
//   <dir>/<20-digit base offset>.index      sparse offset index (cache)
//   <dir>/<20-digit base offset>.timeindex  sparse time index (cache)
//
// docs/log-format.md describes the bytes and the flush/recovery contract.
//
// Threading: one appender at a time (Append, Truncate, Flush, ApplyRetention,
// DeleteRecordsBefore, Roll are serialised by an internal mutex); any number
// of readers (Read, OffsetForTime, the accessors) may run concurrently with
// it. Returned FileSlices keep their segment's file open on their own.
//
// Storage faults (docs/log-format.md, "Storage faults"): the first I/O error
// of a mutating call (a write, fsync, msync, truncate, rename, create or
// unlink failing) takes the log offline: failed() turns true, failure()
// keeps that first error, and every later Append, Flush, MaybeFlush,
// MaybeRoll, Truncate, ApplyRetention and DeleteRecordsBefore returns an
// IOError naming it. flushed_offset() never moves again, so nothing written
// around the fault is ever reported durable. Reads keep working on what
// was appended before the fault. Close() on an offline log releases the
// files without flushing or writing a clean checkpoint and returns the
// failure; reopening recovers from the last durable state.
#pragma once

#include <climits>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "headrace/record_batch.h"
#include "headrace/status.h"
#include "headrace/write_cache.h"
#include "headrace/types.h"

namespace headrace {

class FileEnv;  // common/file_env.h: the I/O seam
struct CleanRequest;    // log/cleaner.h: the log cleaner
struct CleanableState;
struct CleanReport;

enum class TimestampType : int8_t { kCreateTime = 0, kLogAppendTime = 1 };

struct LogConfig {
  int64_t segment_bytes = 1LL << 30;            // segment.bytes
  int64_t segment_ms = 7LL * 24 * 3600 * 1000;  // segment.ms
  int64_t retention_ms = 7LL * 24 * 3600 * 1000;  // retention.ms; -1 = forever
  int64_t retention_bytes = -1;                 // retention.bytes; -1 = no limit
  int32_t index_interval_bytes = 4096;          // index.interval.bytes
  int32_t max_index_bytes = 10 * 1024 * 1024;   // segment.index.bytes (prealloc)
  int32_t max_message_bytes = 1048588;          // max.message.bytes (one batch)
  // Flush policy. After `flush_interval_messages` records appended since the
  // last flush, or `flush_interval_ms` since it (checked on append and by
  // MaybeFlush), the log fsyncs. 0 = fsync after every append;
  // -1 = never by count/time (explicit Flush() only).
  int64_t flush_interval_messages = -1;         // flush.messages
  int64_t flush_interval_ms = -1;               // flush.ms
  TimestampType timestamp_type = TimestampType::kCreateTime;  // message.timestamp.type
  // Leader appends of a CreateTime log refuse a record whose timestamp is
  // more than this before / after the broker's clock (INVALID_TIMESTAMP);
  // INT64_MAX = no bound (Kafka 3.x defaults). The legacy difference bound
  // applies to each side left at INT64_MAX (as Kafka 3.6+ does).
  int64_t timestamp_before_max_ms = INT64_MAX;      // message.timestamp.before.max.ms
  int64_t timestamp_after_max_ms = INT64_MAX;       // message.timestamp.after.max.ms
  int64_t timestamp_difference_max_ms = INT64_MAX;  // message.timestamp.difference.max.ms
  // compression.type: nullopt ("producer") keeps batches as sent; otherwise
  // a leader append re-encodes every data batch of another codec with this
  // one (kNone = "uncompressed"). Control batches are never re-encoded.
  std::optional<Compression> compression_target;
  // Preallocate index files to max_index_bytes and trim on roll/close.
  bool preallocate_indexes = true;
  // Append itself fsyncs when the flush policy says so. The broker turns
  // this off: its flusher thread is the only one that fsyncs partition logs
  // (AppendInfo::flush_due after an append, FlushDue() between appends).
  bool flush_on_append = true;
};

// What one Append did.
struct AppendInfo {
  Offset base_offset;          // offset given to the first record
  Offset last_offset;          // offset of the last record
  TimestampMs max_timestamp;   // largest record timestamp in what was appended
  Offset offset_of_max_timestamp;
  TimestampMs log_append_time = kNoTimestamp;  // set when timestamp_type is LogAppendTime
  int32_t record_count = 0;
  int32_t batch_count = 0;
  int64_t bytes = 0;
  // The flush policy asked for an fsync after this append (Append fsynced
  // already when flush_on_append; otherwise the owner schedules it).
  bool flush_due = false;
};

// What Read found: whole batches, in offset order, as file slices.
struct ReadResult {
  std::vector<FileSlice> slices;
  int64_t bytes = 0;        // sum of slice lengths
  Offset first_batch_base;  // base offset of the first batch returned (if any)
};

struct RecoveryReport {
  int segments = 0;              // segments found
  int64_t truncated_bytes = 0;   // bytes cut off the tail (invalid or torn)
  Offset truncated_at{-1};       // offset where the valid log ends if cut, else -1
  std::string reason;            // why the tail was cut ("" if not)
  bool indexes_rebuilt = false;  // some index was missing/garbled and rebuilt
};

struct RetentionReport {
  int segments_deleted = 0;
  int64_t bytes_deleted = 0;
  Offset new_start_offset;
  int segments_by_time = 0;  // the first segments_by_time went by retention.ms, the rest by size
  std::vector<int64_t> deleted_base_offsets;  // of the deleted segments, oldest first
};

class Log {
 public:
  // Opens the log in `dir` (created if missing), recovering it: the tail after
  // the last flush point is scanned and cut at the first invalid or torn
  // batch; missing or invalid indexes are rebuilt from the log.
  // Every file operation goes through `env` (null = the OS); it must outlive
  // the log.
  static Result<std::unique_ptr<Log>> Open(const std::string& dir, const LogConfig& config,
                                           FileEnv* env = nullptr);
  virtual ~Log() = default;

  // Validates `batches` (one or more RecordBatch v2, back to back), assigns
  // offsets by rewriting each batch's base offset in place (and the max
  // timestamp + CRC when timestamp_type is LogAppendTime), and appends them
  // in one write. On error nothing is written and the log is unchanged.
  // Errors: Corruption (CRC, magic, sizes, a compressed payload that does
  // not decompress; with kInvalidRecordDetail: record count, offset deltas,
  // record structure, inside compressed batches too; with
  // kInvalidTimestampDetail: a timestamp outside the bounds), TooLarge (a
  // batch above max_message_bytes), InvalidArgument (empty input).
  virtual Result<AppendInfo> Append(std::span<uint8_t> batches) = 0;
  // A follower's append: the batches keep the offsets (and leader epochs)
  // they carry. Offsets only grow: the first batch starts at or after
  // end_offset() and each next one after the previous one (a gap is a
  // leader's cleaned log, which may also hold cleaned batches: fewer
  // records than offsets). Validated as Append; on error nothing is
  // written. Errors: those of Append, and InvalidArgument for a batch
  // starting below the log end or the previous batch's end. `cache`: how
  // the write treats the page cache (FileEnv's WriteCache; every override
  // keeps the default).
  virtual Result<AppendInfo> AppendWithOffsets(std::span<uint8_t> batches,
                                               WriteCache cache = WriteCache::kKeep) = 0;

  // Whole batches containing offsets >= `offset`, up to `max_bytes` (at least
  // one whole batch is returned even if larger, as Kafka does, unless
  // `min_one_batch` is false), never past `upper_bound` (exclusive; pass
  // end_offset() or the high watermark).
  // Errors: OutOfRange if offset < start_offset() or offset > end_offset().
  virtual Result<ReadResult> Read(Offset offset, int64_t max_bytes, Offset upper_bound,
                                  bool min_one_batch = true) const = 0;

  // The first record whose timestamp is >= ts, looking inside batches
  // (compressed ones decompressed): its offset and its own timestamp
  // (Kafka's ListOffsets semantics); NotFound if there is none.
  virtual Result<std::pair<Offset, TimestampMs>> OffsetForTime(TimestampMs ts) const = 0;
  // The largest timestamp in the log and the offset that carries it
  // (ListOffsets MAX_TIMESTAMP); NotFound for an empty log.
  virtual Result<std::pair<TimestampMs, Offset>> MaxTimestamp() const = 0;

  // fsyncs every segment with unflushed data (and the directory when a
  // segment was created since the last flush) and records the flush point.
  virtual Status Flush() = 0;
  // Flushes if the flush policy (messages/ms) says so. Cheap when it doesn't.
  virtual Status MaybeFlush() = 0;
  // Whether the flush policy (messages/ms) asks for a flush now.
  virtual bool FlushDue() const = 0;
  // Removes every record with offset >= `offset` (whole segments and the tail
  // of one). REQUIRES: start_offset() <= offset <= end_offset().
  virtual Status Truncate(Offset offset) = 0;
  // Deletes every segment and continues as an empty log at `offset` (start
  // = end = flushed = `offset`), with a new active segment based there: a
  // follower whose leader's log starts past everything it has. Any offset
  // >= 0, below or above the current range. Errors: InvalidArgument for a
  // negative offset; an I/O error takes the log offline.
  virtual Status TruncateFullyAndStartAt(Offset offset) = 0;
  // Deletes whole non-active segments by retention.ms (newest timestamp in the
  // segment older than now - retention_ms) and retention.bytes.
  virtual Result<RetentionReport> ApplyRetention(TimestampMs now) = 0;
  // Moves the log start offset forward to `offset` (DeleteRecords) and deletes
  // segments wholly below it. REQUIRES: offset <= end_offset().
  virtual Status DeleteRecordsBefore(Offset offset) = 0;
  // Rolls a new segment if the active one is older than segment_ms.
  virtual Status MaybeRoll(TimestampMs now) = 0;
  // Replaces the configuration (retention, roll, flush settings take effect
  // from the next operation).
  virtual void SetConfig(const LogConfig& config) = 0;
  // Flushes and closes all files; later calls return Closed.
  virtual Status Close() = 0;
  // Closes all files without flushing or writing a checkpoint, for a log
  // whose directory is about to be deleted (nothing written is read again);
  // later calls return Closed. Readers holding slices keep their files open
  // until they drop them.
  virtual Status Abandon() = 0;

  // ---- log compaction (cleanup.policy=compact; log/cleaner.h) ----
  // How much of the log a cleaning pass could rewrite now (dirty ratio).
  virtual Result<CleanableState> Cleanable(const CleanRequest& req);
  // One cleaning pass: keeps the latest record of every key (and the rules
  // of cleaner.h), replacing segments crash-safely; offsets never change,
  // so a cleaned log has gaps. Concurrent appends and reads go on. Errors:
  // Closed when req.stop was set; an I/O error takes the log offline.
  // The default (logs that cannot be compacted) answers Unsupported.
  virtual Result<CleanReport> Clean(const CleanRequest& req);

  virtual Offset start_offset() const = 0;    // log start offset
  virtual Offset end_offset() const = 0;      // log end offset (next offset to assign)
  virtual Offset flushed_offset() const = 0;  // everything below is fsynced
  virtual int64_t size_bytes() const = 0;     // sum of segment .log sizes
  virtual int segment_count() const = 0;
  // The base offsets of the segments, oldest first (the last one is the
  // active segment): files kept beside a segment (a partition's
  // .txnindex) follow them.
  virtual std::vector<Offset> segment_base_offsets() const = 0;
  // The base offset of the active segment (the last of the above).
  virtual Offset active_segment_base() const = 0;
  virtual const RecoveryReport& recovery_report() const = 0;
  virtual const std::string& dir() const = 0;
  // True once an I/O error took the log offline (see the head comment).
  virtual bool failed() const = 0;
  // The first I/O error that took the log offline; OK while !failed().
  virtual Status failure() const = 0;
};

}  // namespace headrace
