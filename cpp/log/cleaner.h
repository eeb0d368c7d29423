// The log cleaner (cleanup.policy=compact): what one cleaning pass of a log
// takes and reports, the I/O throttle shared by the cleaner threads, and the
// cleaner's per-log checkpoint. docs/compaction.md describes the design,
// the rules and the on-disk protocol; LogImpl::Clean (cleaner.cc) runs a
// pass, cleaner_swap.cc replaces segments crash-safely.
//
// A pass over a log:
//  1. The cleanable range: whole non-active segments, each ending at or
//     below `clean_below` (the broker passes min(HW, LSO)) and below the
//     segment holding the flush point, stopping at the first segment with
//     a record newer than now - min_compaction_lag_ms.
//  2. The dirty part of it (from the cleaner checkpoint's first dirty
//     offset) is read into an OffsetMap: key -> latest offset, skipping
//     control batches and aborted transactions. When the map is full the
//     pass maps only up to there; the rest waits for the next pass.
//  3. Every segment from the log start to the mapped end is rewritten, in
//     groups of consecutive segments that fit one segment (segment.bytes,
//     2^31 relative offsets): a record is kept unless the map holds a
//     later offset for its key, it belongs to an aborted transaction, or it
//     is a tombstone in a segment cleaned more than delete.retention.ms ago.
//     Control batches (transaction markers) are kept until no data of their
//     transaction remains and delete.retention.ms passed since their
//     segment was cleaned. The last batch of each producer is kept whole.
//     Offsets never change: batches keep their base and last offsets, so a
//     cleaned log has gaps.
//  4. Each group's output is written as <base>.log.cleaned, fsynced, renamed
//     to <base>.log.swap (the commit point), the old segments deleted, and
//     the swap renamed to <base>.log. Log::Open finishes a half-done swap.
//  5. The checkpoint (cleaner.checkpoint) records the new first dirty
//     offset and when each clean segment was cleaned.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/file_env.h"
#include "headrace/status.h"
#include "headrace/types.h"

namespace headrace {

// log.cleaner.io.max.bytes.per.second, shared by every cleaner thread: a
// caller that moved `bytes` sleeps until the rate since the window started
// is back under the limit (Kafka's Throttler). Thread-safe.
class IoThrottler {
 public:
  // `bytes_per_second` <= 0 or >= 1e300 (Kafka's Double.MaxValue default) = unlimited.
  explicit IoThrottler(double bytes_per_second) { SetRate(bytes_per_second); }
  void SetRate(double bytes_per_second);
  // Accounts `bytes` and sleeps as needed; returns the ms slept.
  int64_t Throttle(int64_t bytes);
  int64_t total_sleep_ms() const { return total_sleep_ms_.load(); }

 private:
  std::mutex mu_;
  double rate_ = 0;  // 0 = unlimited
  std::chrono::steady_clock::time_point window_start_ = std::chrono::steady_clock::now();
  double window_bytes_ = 0;
  std::atomic<int64_t> total_sleep_ms_{0};
};

// A transaction aborted by a marker: the producer's batches in [first, last]
// (last = the ABORT marker's offset) are aborted.
struct CleanerAbortedTxn {
  int64_t producer_id = -1;
  Offset first{-1};
  Offset last{-1};
};

struct CleanRequest {
  int64_t now_ms = 0;                        // wall clock
  Offset clean_below{0};                     // never clean at/after (min(HW, LSO))
  int64_t min_compaction_lag_ms = 0;         // min.compaction.lag.ms
  int64_t max_compaction_lag_ms = INT64_MAX; // max.compaction.lag.ms (for Cleanable)
  int64_t delete_retention_ms = 86400000;    // delete.retention.ms
  int64_t dedupe_buffer_bytes = 128 << 20;   // this thread's share of the dedupe buffer
  int64_t max_segment_bytes = 1LL << 30;     // segment.bytes: group size bound
  std::vector<CleanerAbortedTxn> aborted;    // every aborted txn of the log
  // producer id -> last offset of its last batch: that batch is kept whole.
  std::unordered_map<int64_t, int64_t> producer_last_offsets;
  IoThrottler* throttler = nullptr;          // null = unthrottled
  const std::atomic<bool>* stop = nullptr;   // set = abandon the pass (Aborted)
};

// How much of a log could be cleaned now (the cleaner picks the dirtiest).
struct CleanableState {
  Offset first_dirty{0};       // where the dirty part starts
  Offset first_uncleanable{0}; // where the cleanable range ends
  int64_t clean_bytes = 0;     // bytes of cleanable segments below first_dirty
  int64_t dirty_bytes = 0;     // bytes of cleanable segments from first_dirty
  // Largest timestamp of the first dirty segment (-1 none): max.compaction.lag.ms.
  int64_t first_dirty_timestamp = -1;
  // A clean segment holds tombstones or markers whose delete.retention.ms
  // ran out: a pass would remove them even with nothing dirty.
  bool horizon_due = false;
  double dirty_ratio() const {
    int64_t total = clean_bytes + dirty_bytes;
    return total > 0 ? static_cast<double>(dirty_bytes) / static_cast<double>(total) : 0.0;
  }
  // max.compaction.lag.ms: the dirty part's oldest segment waited too long.
  bool overdue(int64_t now_ms, int64_t max_lag_ms) const {
    return dirty_bytes > 0 && first_dirty_timestamp >= 0 && max_lag_ms < INT64_MAX &&
           first_dirty_timestamp < now_ms - max_lag_ms;
  }
};

struct CleanReport {
  bool cleaned = false;          // segments were rewritten
  int segments_in = 0;           // segments replaced
  int segments_out = 0;          // segments written
  int64_t bytes_read = 0;        // map building and copying
  int64_t bytes_in = 0;          // size of the segments replaced
  int64_t bytes_out = 0;         // size of the segments written
  int64_t records_removed = 0;   // superseded, tombstones, aborted
  int64_t batches_removed = 0;   // whole batches dropped (markers included)
  int64_t map_keys = 0;          // distinct keys mapped
  Offset first_dirty_before{0};
  Offset first_dirty_after{0};   // the next pass starts here
  // The ABORT markers (producer id, offset) below first_dirty_after that
  // are still in the log after the pass. An aborted-transaction index entry
  // below first_dirty_after whose marker is not listed must go: a
  // read_committed consumer would otherwise wait for that marker forever
  // (Kafka rewrites the .txnindex of cleaned segments the same way).
  std::vector<std::pair<int64_t, int64_t>> abort_markers_kept;
  int64_t elapsed_ms = 0;
};

// <dir>/cleaner.checkpoint (text, CRC-checked, replaced atomically):
//   headrace-cleaner-checkpoint v1
//   first_dirty <int64>
//   segments <n>
//   <base> <cleaned at, wall ms> <pending deletes>   n lines
//   crc32c <uint32>
// A missing or garbled file = nothing cleaned yet (first dirty = log start).
struct CleanedSegment {
  int64_t cleaned_ms = 0;       // when its content was first cleaned (wall ms)
  int64_t pending_deletes = 0;  // tombstones / markers it keeps only until the horizon
  bool operator==(const CleanedSegment&) const = default;
};
struct CleanerCheckpoint {
  Offset first_dirty{0};
  std::map<int64_t, CleanedSegment> segments;  // clean segment base -> its facts
};
inline constexpr const char* kCleanerCheckpointName = "cleaner.checkpoint";
CleanerCheckpoint ReadCleanerCheckpoint(FileEnv& env, const std::string& dir);
Status WriteCleanerCheckpoint(FileEnv& env, const std::string& dir, const CleanerCheckpoint& c);

}  // namespace headrace
