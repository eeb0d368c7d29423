// Per-partition producer state (KIP-98): per producer id, its current epoch,
// the sequence ranges and offsets of its last kMaxTrackedBatches appended
// batches, its coordinator epoch and its open transaction; and the open
// ("ongoing") transactions of the partition ordered by first offset, which
// bound the last stable offset.
//
// Partition::AppendAsLeader checks every batch carrying a producer id (>= 0)
// with a base sequence (>= 0) against the table before appending:
//   epoch < known epoch                  -> INVALID_PRODUCER_EPOCH (47);
//                                           transactional clients take it
//                                           as "fenced" (KIP-588)
//   epoch > known epoch                  -> a new epoch (KIP-360 bump): its
//                                           first sequence must be 0, else
//                                           OUT_OF_ORDER_SEQUENCE_NUMBER (45)
//   same epoch, [first, last] sequence   -> duplicate: nothing is appended
//     equal to one of the last 5 batches    and the original offsets are
//                                           answered with NONE (as Kafka does)
//   same epoch, first != last + 1        -> OUT_OF_ORDER_SEQUENCE_NUMBER (45)
//     (sequences wrap from INT32_MAX to 0)
//   unknown producer id (no entry, or no -> accepted with any sequence and
//     batch tracked yet)                    tracked from then on. This is
//     current Kafka's rule (KIP-360, Kafka 2.5): a broker without state
//     for a producer (its entry expired, or a follower started over
//     empty) accepts any sequence and no longer answers
//     UNKNOWN_PRODUCER_ID. As KIP-360 also asks, state outlives the
//     producer's batches: retention and DeleteRecords do not remove it
//     (snapshots carry it), only expiry does. An epoch seen before (an
//     entry created by a marker) is still checked.
// A request whose batches are all duplicates answers the first one's
// offsets; a request mixing duplicates with new ones is refused with
// OUT_OF_ORDER_SEQUENCE_NUMBER (clients send one batch per partition).
// Batches without a producer id cost one header walk and no lookup.
//
// Transactions: a batch with the transactional attribute opens the
// producer's transaction at its base offset when none is open; a control
// batch (an end-transaction marker, COMMIT or ABORT) closes it. Markers are
// checked with CheckMarker: an epoch below the producer's ->
// INVALID_PRODUCER_EPOCH, a coordinator epoch below the one of the
// producer's last marker -> TRANSACTION_COORDINATOR_FENCED (52). A marker
// for a producer without an open transaction is accepted (nothing to end).
//
// Recovery: Partition loads the table when it opens (newest producer
// snapshot, then the batch headers after it; producer_snapshot.h) and
// after a truncation. Entries whose last write is older than
// producer.id.expiration.ms and that have no open transaction are removed
// by RemoveExpired.
//
// Threading: not thread-safe; Partition guards its table with its mutex.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "broker/base/kafka_error.h"
#include "headrace/log.h"
#include "headrace/record_batch.h"
#include "headrace/status.h"
#include "headrace/types.h"

namespace headrace::broker {

// Sequence arithmetic as Kafka defines it: wraps from INT32_MAX to 0.
int32_t IncrementSequence(int32_t seq, int32_t by);

// One appended batch of a producer.
struct ProducerBatch {
  int32_t first_seq = -1;
  int32_t last_seq = -1;
  Offset first_offset{-1};
  Offset last_offset{-1};
};

struct ProducerEntry {
  static constexpr int kMaxTrackedBatches = 5;
  int16_t epoch = -1;  // -1 = none seen yet
  int32_t coordinator_epoch = -1;  // of the producer's last marker; -1 = none
  Offset current_txn_first_offset{-1};  // the open transaction's first offset; -1 = none
  TimestampMs last_timestamp = kNoTimestamp;  // max timestamp of its last batch or marker
  // Ring of the last batches, oldest first from `next` when `count` is full.
  std::array<ProducerBatch, kMaxTrackedBatches> batches{};
  int count = 0;
  int next = 0;  // slot the next batch goes to

  const ProducerBatch& last() const {
    return batches[(next + kMaxTrackedBatches - 1) % kMaxTrackedBatches];
  }
  void Push(const ProducerBatch& b);
};

// True if `h` is checked by the table (an idempotent producer's batch).
inline bool IsIdempotentBatch(const BatchHeader& h) {
  return h.producer_id >= 0 && h.base_sequence >= 0;
}
// True if `h` is an end-transaction marker's batch (control, with a producer).
inline bool IsTxnMarkerBatch(const BatchHeader& h) {
  return h.producer_id >= 0 && h.is_control();
}
// True if the table must see `h` (an idempotent batch or a marker).
inline bool IsProducerBatch(const BatchHeader& h) {
  return IsIdempotentBatch(h) || IsTxnMarkerBatch(h);
}

// A transaction ended by a marker: [first_offset, last_offset], the last
// being the marker's offset. first_offset is -1 when the producer had no
// open transaction.
struct CompletedTxn {
  int64_t producer_id = -1;
  Offset first_offset{-1};
  Offset last_offset{-1};
  bool commit = false;
};

// An open transaction.
struct OngoingTxn {
  int64_t producer_id = -1;
  Offset first_offset{-1};
};

class ProducerStateTable {
 public:
  // What CheckAppend decided for a request's batches.
  struct Verdict {
    bool duplicate = false;  // all batches were appended before: append nothing
    ProducerBatch original;  // if duplicate: the first batch's original offsets
  };

  // Checks `headers` (one partition's batches of one request, in order)
  // without changing the table. Errors carry the Kafka code (KafkaStatus):
  // INVALID_PRODUCER_EPOCH or OUT_OF_ORDER_SEQUENCE_NUMBER.
  Result<Verdict> CheckAppend(std::span<const BatchHeader> headers) const;

  // Checks a marker about to be appended (see the head comment): OK,
  // INVALID_PRODUCER_EPOCH or TRANSACTION_COORDINATOR_FENCED.
  Status CheckMarker(int64_t producer_id, int16_t producer_epoch,
                     int32_t coordinator_epoch) const;

  // Records an appended data batch; `h.base_offset` must be its assigned
  // offset. A batch with an older epoch than the entry's is ignored
  // (replication, rebuild order); a newer epoch replaces the tracked
  // batches. A transactional batch opens the producer's transaction if none
  // is open. No-op unless IsIdempotentBatch(h).
  void Update(const BatchHeader& h);
  // Records an appended end-transaction marker (IsTxnMarkerBatch(h)): closes
  // the producer's transaction and returns it (first_offset -1 if none was
  // open).
  CompletedTxn UpdateMarker(const BatchHeader& h, const EndTxnMarker& marker);

  // Open transactions ordered by first offset.
  std::vector<OngoingTxn> ongoing() const;
  // The first offset of the earliest open transaction; nullopt when none.
  std::optional<Offset> first_unstable_offset() const;

  // Removes the entries with no open transaction whose last_timestamp is
  // before `now_ms - expiration_ms`; returns how many.
  size_t RemoveExpired(int64_t now_ms, int64_t expiration_ms);

  // Replaces the entry of `producer_id` (a loaded snapshot), opening its
  // transaction when entry.current_txn_first_offset >= 0.
  void Restore(int64_t producer_id, const ProducerEntry& entry);

  const ProducerEntry* Find(int64_t producer_id) const;
  const std::unordered_map<int64_t, ProducerEntry>& entries() const { return producers_; }
  size_t size() const { return producers_.size(); }
  void Clear() {
    producers_.clear();
    ongoing_.clear();
  }

  // Whether the table was rebuilt from the log (Partition does it once).
  bool loaded() const { return loaded_; }
  void set_loaded() { loaded_ = true; }

 private:
  // Checks one batch against `entry` (null = unknown producer). Sets
  // *duplicate and fills *original when it repeats a tracked batch.
  static Status CheckOne(const ProducerEntry* entry, const BatchHeader& h, bool* duplicate,
                         ProducerBatch* original);

  std::unordered_map<int64_t, ProducerEntry> producers_;
  // Invariant: one entry per producer with current_txn_first_offset >= 0,
  // keyed by that offset.
  std::map<Offset, int64_t> ongoing_;
  bool loaded_ = false;
};

inline constexpr int64_t kProducerStateRebuildWindow = 1'000'000;  // offsets

// Clears `table` and replays the headers of the batches in
// [max(log start, log end - window), log end) into it (markers: the whole
// control batch, to know COMMIT from ABORT). Slices without a file (fd < 0,
// test fakes) are skipped. Errors: the log's Read errors, IOError from
// pread, Corruption for a garbled header.
// `on_marker` (optional) hears every marker replayed, right after the table
// applied it.
using MarkerReplayed = std::function<void(const CompletedTxn&)>;
Status RebuildProducerState(const Log& log, ProducerStateTable* table,
                            int64_t window = kProducerStateRebuildWindow,
                            const MarkerReplayed& on_marker = {});
// Replays the batches in [from, log end) into `table` without clearing it
// (the tail after a loaded snapshot). Same errors.
Status ReplayProducerState(const Log& log, Offset from, ProducerStateTable* table,
                           const MarkerReplayed& on_marker = {});

}  // namespace headrace::broker
