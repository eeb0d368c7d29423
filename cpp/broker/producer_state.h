// Per-partition producer state for idempotent producers (KIP-98, without
// transactions): per producer id, its current epoch and the sequence ranges
// and offsets of its last kMaxTrackedBatches appended batches.
//
// Partition::Append checks every batch carrying a producer id (>= 0) with a
// base sequence (>= 0) against the table before appending:
//   epoch < known epoch                  -> INVALID_PRODUCER_EPOCH (47)
//   epoch > known epoch                  -> a new epoch (KIP-360 bump): its
//                                           first sequence must be 0, else
//                                           OUT_OF_ORDER_SEQUENCE_NUMBER (45)
//   same epoch, [first, last] sequence   -> duplicate: nothing is appended
//     equal to one of the last 5 batches    and the original offsets are
//                                           answered with NONE (as Kafka does)
//   same epoch, first != last + 1        -> OUT_OF_ORDER_SEQUENCE_NUMBER (45)
//     (sequences wrap from INT32_MAX to 0)
//   unknown producer id, any sequence    -> accepted and tracked from then on.
//     Kafka answers UNKNOWN_PRODUCER_ID or OUT_OF_ORDER for seq != 0 when it
//     has no state; clients then reset their producer (KIP-360). We accept
//     instead: state is only unknown here after a restart whose rebuild did
//     not reach the producer's batches, and a client's in-flight retry is
//     then at worst written twice, never lost.
// A request whose batches are all duplicates answers the first one's
// offsets; a request mixing duplicates with new batches is refused with
// OUT_OF_ORDER_SEQUENCE_NUMBER (clients send one batch per partition).
// Batches without a producer id cost one header walk and no lookup.
//
// Recovery: Partition rebuilds the table lazily, on the first idempotent
// append, with RebuildProducerState: only the batch headers of the last
// kProducerStateRebuildWindow offsets of the log are read (61-byte preads,
// no record decoding). A producer whose last batch is older than that is
// unknown after a restart (and so accepted, see above). Entries never
// expire yet and are not snapshotted to disk.
//
// Threading: not thread-safe; Partition guards its table with append_mutex().
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <unordered_map>

#include "broker/kafka_error.h"
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
  int16_t epoch = -1;
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

  // Records an appended batch; `h.base_offset` must be its assigned offset.
  // A batch with an older epoch than the entry's is ignored (rebuild order);
  // a newer epoch replaces the entry. No-op unless IsIdempotentBatch(h).
  void Update(const BatchHeader& h);

  const ProducerEntry* Find(int64_t producer_id) const;
  size_t size() const { return producers_.size(); }
  void Clear() { producers_.clear(); }

  // Whether the table was rebuilt from the log (Partition does it once).
  bool loaded() const { return loaded_; }
  void set_loaded() { loaded_ = true; }

 private:
  // Checks one batch against `entry` (null = unknown producer). Sets
  // *duplicate and fills *original when it repeats a tracked batch.
  static Status CheckOne(const ProducerEntry* entry, const BatchHeader& h, bool* duplicate,
                         ProducerBatch* original);

  std::unordered_map<int64_t, ProducerEntry> producers_;
  bool loaded_ = false;
};

inline constexpr int64_t kProducerStateRebuildWindow = 1'000'000;  // offsets

// Clears `table` and replays the headers of the batches in
// [max(log start, log end - window), log end) into it. Slices without a
// file (fd < 0, test fakes) are skipped. Errors: the log's Read errors,
// IOError from pread, Corruption for a garbled header.
Status RebuildProducerState(const Log& log, ProducerStateTable* table,
                            int64_t window = kProducerStateRebuildWindow);

}  // namespace headrace::broker
