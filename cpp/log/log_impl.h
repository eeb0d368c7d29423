// The Log implementation: a directory of segments (segment.h), one append
// path, concurrent readers, a checkpoint file (checkpoint.h).
//
// Locks (always taken in this order):
//   flush_mu_      serialises Flush() so only one fsync round runs at a time.
//   append_mu_     serialises every writer: Append, Truncate, Roll,
//                  ApplyRetention, DeleteRecordsBefore, SetConfig, Close and
//                  the snapshot/publish steps of Flush. Guards config_, the
//                  appender-only fields and the flush point bookkeeping.
//   segments_mu_   guards the segments_ vector. Writers hold append_mu_ and
//                  take it exclusively only while changing the vector;
//                  readers take it shared just long enough to copy the
//                  shared_ptrs they need.
//   checkpoint_mu_ guards checkpoint_ and the checkpoint file.
//   failure_mu_    (a leaf) guards failure_.
// Published without locks (release/acquire): start_offset_, end_offset_,
// flushed_offset_, closed_, failed_, and each segment's size.
// Fencing: failed_ is set (once, by Fence) while holding append_mu_ or
// flush_mu_ (or inside Recover, before the log is shared). flushed_offset_
// never advances after a fault: Flush and Close advance it only while
// holding both locks, after checking failed_ (so no Fence can run between
// the check and the store); Truncate only lowers it.
// Invariant: segments_ is sorted by base offset, never empty while open,
// contiguous (each base = the previous segment's next offset); the last one
// is the active segment; end_offset_ is stored only after the bytes it
// covers are in the file and the segment's size is published.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "common/file_env.h"
#include "headrace/log.h"
#include "log/checkpoint.h"
#include "log/cleaner.h"
#include "log/segment.h"

namespace headrace {

inline int64_t WallClockMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class LogImpl final : public Log {
 public:
  // `env` must outlive the log.
  LogImpl(std::string dir, const LogConfig& config, FileEnv* env)
      : dir_(std::move(dir)), env_(env), config_(config) {}
  ~LogImpl() override;

  // Loads and recovers the directory (log_recovery.cc). Called once by Open.
  Status Recover();

  Result<AppendInfo> Append(std::span<uint8_t> batches) override;
  Result<AppendInfo> AppendWithOffsets(std::span<uint8_t> batches,
                                       WriteCache cache = WriteCache::kKeep) override;
  Result<ReadResult> Read(Offset offset, int64_t max_bytes, Offset upper_bound,
                          bool min_one_batch) const override;
  Result<std::pair<Offset, TimestampMs>> OffsetForTime(TimestampMs ts) const override;
  Result<std::pair<TimestampMs, Offset>> MaxTimestamp() const override;
  Status Flush() override;
  Status MaybeFlush() override;
  bool FlushDue() const override;
  Status Truncate(Offset offset) override;
  Status TruncateFullyAndStartAt(Offset offset) override;
  Result<RetentionReport> ApplyRetention(TimestampMs now) override;
  Status DeleteRecordsBefore(Offset offset) override;
  Status MaybeRoll(TimestampMs now) override;
  void SetConfig(const LogConfig& config) override;
  Status Close() override;
  Status Abandon() override;
  Result<CleanableState> Cleanable(const CleanRequest& req) override;
  Result<CleanReport> Clean(const CleanRequest& req) override;

  Offset start_offset() const override { return Offset(start_offset_.load(std::memory_order_acquire)); }
  Offset end_offset() const override { return Offset(end_offset_.load(std::memory_order_acquire)); }
  Offset flushed_offset() const override { return Offset(flushed_offset_.load(std::memory_order_acquire)); }
  int64_t size_bytes() const override;
  int segment_count() const override;
  std::vector<Offset> segment_base_offsets() const override;
  Offset active_segment_base() const override;
  const RecoveryReport& recovery_report() const override { return report_; }
  const std::string& dir() const override { return dir_; }
  bool failed() const override { return failed_.load(std::memory_order_acquire); }
  Status failure() const override;

 private:
  // ---- fencing (log.cc) ----
  // Returns `st`. An IOError takes the log offline: the first one is kept
  // in failure_ and logged (once; "disk full" for ENOSPC/EDQUOT).
  // REQUIRES: append_mu_ or flush_mu_ held, or inside Recover.
  Status Fence(Status st);
  // The error every call on an offline log returns. REQUIRES: failed().
  Status OfflineError() const;

  // ---- append path (log.cc) ----
  // Validates every batch of `input` (no mutation) into metas_ and `info`.
  // A leader append (`leader`) also checks the records of compressed
  // batches and the record timestamps against the timestamp bounds;
  // a follower's batches were checked by their leader.
  Status ValidateInput(std::span<const uint8_t> input, AppendInfo* info, bool leader);
  // INVALID_TIMESTAMP (kInvalidTimestampDetail) when a CreateTime record
  // lies outside [now - timestamp_before_max_ms, now + timestamp_after_max_ms].
  Status CheckTimestampBounds(TimestampMs min_ts, TimestampMs max_ts, int64_t now) const;
  // compression.type: when some data batch of `input` (validated into
  // metas_) has another codec than the target, re-encodes the input into
  // converted_, updates metas_ sizes and info->bytes, and returns true.
  // Errors: Corruption; TooLarge when a re-encoded batch is above
  // max_message_bytes. REQUIRES: config_.compression_target.
  Result<bool> ConvertInput(std::span<const uint8_t> input, AppendInfo* info);
  // Writes the base offsets assigned in `from` (converted_) into the same
  // batches of the caller's `to`, so that the input says where its records
  // went whichever bytes were stored.
  void CopyBaseOffsets(std::span<const uint8_t> from, std::span<uint8_t> to) const;
  // Rewrites offsets (and timestamps) in place from end_offset_.
  void AssignOffsets(std::span<uint8_t> input, AppendInfo* info);
  // Follower append: checks that the batches' own offsets continue
  // end_offset_ and makes metas_ and `info` absolute.
  Status KeepOffsets(std::span<const uint8_t> input, AppendInfo* info);
  Result<AppendInfo> AppendLocked(std::span<uint8_t> batches, bool assign_offsets,
                                  WriteCache cache, std::unique_lock<std::mutex>& lock);
  // REQUIRES: append_mu_. Rolls when the append would overflow the active
  // segment (bytes, relative offsets, index room) or it is too old.
  Status MaybeRollForAppend(int64_t bytes, int64_t records, int64_t now_ms);
  Status RollLocked();
  // REQUIRES: flush_mu_ and append_mu_. Seals the active segment, fsyncs
  // what the last Flush did not cover, writes a clean checkpoint.
  Status SealForCloseLocked();
  bool FlushDueLocked(int64_t now_ms) const;
  // REQUIRES: checkpoint_mu_. Writes checkpoint_ with the current start offset.
  Status WriteCheckpointLocked(bool sync);
  // Records the flush point at `offset` (in `segment`, at `position`).
  void SetFlushPointLocked(Offset offset, Offset segment, int64_t position);

  // ---- segments (log_retention.cc) ----
  // REQUIRES: append_mu_. Removes the first `count` segments from the list
  // (never the active one), deletes their files, adds them to `report`.
  Status DeleteOldestSegments(size_t count, RetentionReport* report);
  // REQUIRES: append_mu_; start_offset() <= offset < end_offset().
  Status TruncateLocked(Offset offset);
  // REQUIRES: append_mu_. Replaces every segment with an empty one at `offset`.
  Status TruncateFullyLocked(Offset offset);
  // REQUIRES: append_mu_. Removes the segments after index `keep_last`.
  Status DeleteNewestSegments(size_t keep_last);
  // Copies the segments from the one holding `offset` on (readers).
  std::vector<std::shared_ptr<Segment>> SegmentsFrom(Offset offset) const;
  // The segment holding `offset` (holding) or the first one based above it;
  // nullptr if none (readers).
  std::shared_ptr<Segment> SegmentAfter(Offset offset, bool holding) const;

  // ---- the log cleaner (cleaner.cc, cleaner_swap.cc) ----
  // REQUIRES: append_mu_. How many leading segments a pass may clean.
  size_t CleanableCountLocked(const CleanRequest& req) const;
  // REQUIRES: clean_mu_. Reads cleaner.checkpoint on first use.
  void LoadCleanerCheckpointLocked();
  // Replaces `olds` (consecutive, non-active) with <base>.log.cleaned by the
  // swap protocol. False (and the .cleaned file deleted) when the segments
  // changed meanwhile (retention, truncation). An I/O error fences the log.
  Result<bool> SwapIn(const std::vector<std::shared_ptr<Segment>>& olds, Offset base);
  // At open: deletes .cleaned files and completes .swap files (`names` is
  // the directory listing).
  Status FinishSwaps(const std::vector<std::string>& names);

  // ---- recovery (log_recovery.cc) ----
  Status ListDirectory(std::vector<Offset>* bases);
  Status RecoverDirectory();
  Status RecoverSegment(size_t i, const std::optional<Checkpoint>& cp, Offset* next, bool* stop);
  Status CutTail(size_t i, const ScanOutcome& outcome, const std::string& why);
  Status FinishRecovery(const std::optional<Checkpoint>& cp, Offset end);

  // ---- read helpers (log_read.cc) ----
  Result<std::pair<Offset, TimestampMs>> FindTimeInSegment(const Segment& seg, TimestampMs ts,
                                                           Offset start) const;
  Result<Offset> ExactOffsetOfMax(const Segment& seg, TimestampMs ts, Offset batch_last) const;

  const std::string dir_;
  FileEnv* const env_;
  LogConfig config_;  // guarded by append_mu_

  std::mutex flush_mu_;
  mutable std::mutex append_mu_;
  mutable std::shared_mutex segments_mu_;
  std::mutex checkpoint_mu_;
  // Serialises cleaning passes of this log; taken before append_mu_.
  std::mutex clean_mu_;
  std::optional<CleanerCheckpoint> cleaner_cp_;  // guarded by clean_mu_

  std::vector<std::shared_ptr<Segment>> segments_;  // guarded by segments_mu_
  std::atomic<int64_t> start_offset_{0};
  std::atomic<int64_t> end_offset_{0};
  std::atomic<int64_t> flushed_offset_{0};
  std::atomic<bool> closed_{false};
  std::atomic<bool> failed_{false};
  mutable std::mutex failure_mu_;
  Status failure_;  // guarded by failure_mu_

  // Appender-only state (append_mu_).
  std::vector<BatchMeta> metas_;      // scratch reused by every Append
  std::string records_scratch_;       // decompressed records of the batch validated
  std::string converted_;             // the input re-encoded for compression.type
  int64_t unflushed_messages_ = 0;
  int64_t last_flush_ms_ = 0;
  uint64_t truncations_ = 0;          // bumped by Truncate; stale flushes check it
  bool dir_dirty_ = false;            // a segment file was created since the last flush
  Offset flush_segment_{0};           // segment holding the flush point
  int64_t flush_position_ = 0;

  Checkpoint checkpoint_;             // guarded by checkpoint_mu_
  int64_t last_checkpoint_sync_ms_ = 0;  // guarded by checkpoint_mu_
  // The recovery segment of the file last written (guarded by
  // checkpoint_mu_): Flush writes the file when the flush point enters
  // another segment, or once per kCheckpointIntervalMs.
  Offset checkpoint_file_segment_{-1};
  RecoveryReport report_;             // written by Recover only
};

}  // namespace headrace
