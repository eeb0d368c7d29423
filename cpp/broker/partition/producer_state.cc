#include "broker/partition/producer_state.h"

#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace headrace::broker {

int32_t IncrementSequence(int32_t seq, int32_t by) {
  constexpr int32_t kMax = std::numeric_limits<int32_t>::max();
  if (seq > kMax - by) return by - (kMax - seq) - 1;
  return seq + by;
}

void ProducerEntry::Push(const ProducerBatch& b) {
  batches[next] = b;
  next = (next + 1) % kMaxTrackedBatches;
  if (count < kMaxTrackedBatches) ++count;
}

namespace {

ProducerBatch BatchOf(const BatchHeader& h) {
  return {h.base_sequence, IncrementSequence(h.base_sequence, h.last_offset_delta), h.base_offset,
          h.last_offset()};
}

std::string Describe(const BatchHeader& h) {
  return "producer " + std::to_string(h.producer_id) + " epoch " +
         std::to_string(h.producer_epoch) + " sequence " + std::to_string(h.base_sequence);
}

// Moves `entry` to `epoch` when it is newer: the tracked batches belong to
// the old epoch and are dropped; the transaction and coordinator epoch stay
// (only a marker ends a transaction).
void MaybeBumpEpoch(ProducerEntry& entry, int16_t epoch) {
  if (entry.epoch >= 0 && epoch <= entry.epoch) return;
  entry.batches = {};
  entry.count = 0;
  entry.next = 0;
  entry.epoch = epoch;
}

// Applies `h` to `entry` (the Update rule for one entry, sequences only).
// Returns false when the batch was ignored (an older epoch).
bool Apply(ProducerEntry& entry, const BatchHeader& h) {
  if (entry.epoch >= 0 && h.producer_epoch < entry.epoch) return false;
  MaybeBumpEpoch(entry, h.producer_epoch);
  entry.Push(BatchOf(h));
  entry.last_timestamp = h.max_timestamp;
  return true;
}

}  // namespace

Status ProducerStateTable::CheckOne(const ProducerEntry* entry, const BatchHeader& h,
                                    bool* duplicate, ProducerBatch* original) {
  *duplicate = false;
  if (entry == nullptr || entry->epoch < 0) return Status::OK();  // unknown: accept
  if (h.producer_epoch < entry->epoch) {
    return KafkaStatus(KafkaError::kInvalidProducerEpoch,
                       Describe(h) + ": the producer's epoch is " + std::to_string(entry->epoch));
  }
  if (entry->count == 0) return Status::OK();  // no batch tracked: any sequence
  if (h.producer_epoch > entry->epoch) {
    if (h.base_sequence == 0) return Status::OK();
    return KafkaStatus(KafkaError::kOutOfOrderSequenceNumber,
                       Describe(h) + ": a new epoch must start at sequence 0");
  }
  const ProducerBatch b = BatchOf(h);
  for (int i = 0; i < entry->count; ++i) {
    const ProducerBatch& seen = entry->batches[i];
    if (seen.first_seq == b.first_seq && seen.last_seq == b.last_seq) {
      *duplicate = true;
      *original = seen;
      return Status::OK();
    }
  }
  const int32_t expected = IncrementSequence(entry->last().last_seq, 1);
  if (b.first_seq != expected) {
    return KafkaStatus(KafkaError::kOutOfOrderSequenceNumber,
                       Describe(h) + ": expected sequence " + std::to_string(expected));
  }
  return Status::OK();
}

Result<ProducerStateTable::Verdict> ProducerStateTable::CheckAppend(
    std::span<const BatchHeader> headers) const {
  // Entries as they would be after the earlier batches of this request.
  std::vector<std::pair<int64_t, ProducerEntry>> staged;
  Verdict verdict;
  int duplicates = 0, checked = 0;
  for (const BatchHeader& h : headers) {
    if (!IsIdempotentBatch(h)) continue;
    ++checked;
    ProducerEntry* entry = nullptr;
    for (auto& [pid, e] : staged)
      if (pid == h.producer_id) entry = &e;
    if (entry == nullptr) {
      const ProducerEntry* known = Find(h.producer_id);
      staged.emplace_back(h.producer_id, known ? *known : ProducerEntry{});
      entry = &staged.back().second;
    }
    bool duplicate = false;
    ProducerBatch original;
    HR_RETURN_IF_ERROR(CheckOne(entry, h, &duplicate, &original));
    if (duplicate) {
      if (duplicates++ == 0) verdict.original = original;
      continue;
    }
    Apply(*entry, h);  // offsets are placeholders; only sequences matter here
  }
  if (duplicates > 0 && (duplicates != checked || checked != static_cast<int>(headers.size()))) {
    return KafkaStatus(KafkaError::kOutOfOrderSequenceNumber,
                       "a produce request mixes duplicate batches with new ones");
  }
  verdict.duplicate = duplicates > 0;
  return verdict;
}

Status ProducerStateTable::CheckMarker(int64_t producer_id, int16_t producer_epoch,
                                       int32_t coordinator_epoch) const {
  const ProducerEntry* entry = Find(producer_id);
  if (entry == nullptr) return Status::OK();
  if (entry->epoch >= 0 && producer_epoch < entry->epoch) {
    return KafkaStatus(KafkaError::kInvalidProducerEpoch,
                       "marker for producer " + std::to_string(producer_id) + " epoch " +
                           std::to_string(producer_epoch) + ": the producer's epoch is " +
                           std::to_string(entry->epoch));
  }
  if (coordinator_epoch < entry->coordinator_epoch) {
    return KafkaStatus(KafkaError::kTransactionCoordinatorFenced,
                       "marker for producer " + std::to_string(producer_id) +
                           " from coordinator epoch " + std::to_string(coordinator_epoch) +
                           ", last seen " + std::to_string(entry->coordinator_epoch));
  }
  return Status::OK();
}

void ProducerStateTable::Update(const BatchHeader& h) {
  if (!IsIdempotentBatch(h)) return;
  ProducerEntry& entry = producers_[h.producer_id];
  if (!Apply(entry, h)) return;
  if (h.is_transactional() && entry.current_txn_first_offset.value() < 0) {
    entry.current_txn_first_offset = h.base_offset;
    ongoing_[h.base_offset] = h.producer_id;
  }
}

CompletedTxn ProducerStateTable::UpdateMarker(const BatchHeader& h, const EndTxnMarker& marker) {
  ProducerEntry& entry = producers_[h.producer_id];
  MaybeBumpEpoch(entry, h.producer_epoch);
  entry.coordinator_epoch = marker.coordinator_epoch;
  entry.last_timestamp = h.max_timestamp;
  CompletedTxn done{h.producer_id, entry.current_txn_first_offset, h.last_offset(), marker.commit};
  if (entry.current_txn_first_offset.value() >= 0) {
    ongoing_.erase(entry.current_txn_first_offset);
    entry.current_txn_first_offset = Offset(-1);
  }
  return done;
}

std::vector<OngoingTxn> ProducerStateTable::ongoing() const {
  std::vector<OngoingTxn> out;
  out.reserve(ongoing_.size());
  for (const auto& [first, pid] : ongoing_) out.push_back({pid, first});
  return out;
}

std::optional<Offset> ProducerStateTable::first_unstable_offset() const {
  if (ongoing_.empty()) return std::nullopt;
  return ongoing_.begin()->first;
}

size_t ProducerStateTable::RemoveExpired(int64_t now_ms, int64_t expiration_ms) {
  size_t removed = 0;
  for (auto it = producers_.begin(); it != producers_.end();) {
    const ProducerEntry& e = it->second;
    if (e.current_txn_first_offset.value() < 0 &&
        e.last_timestamp.value() < now_ms - expiration_ms) {
      it = producers_.erase(it);
      ++removed;
    } else {
      ++it;
    }
  }
  return removed;
}

void ProducerStateTable::Restore(int64_t producer_id, const ProducerEntry& entry) {
  auto it = producers_.find(producer_id);
  if (it != producers_.end() && it->second.current_txn_first_offset.value() >= 0) {
    ongoing_.erase(it->second.current_txn_first_offset);
  }
  producers_[producer_id] = entry;
  if (entry.current_txn_first_offset.value() >= 0) {
    ongoing_[entry.current_txn_first_offset] = producer_id;
  }
}

const ProducerEntry* ProducerStateTable::Find(int64_t producer_id) const {
  auto it = producers_.find(producer_id);
  return it == producers_.end() ? nullptr : &it->second;
}

}  // namespace headrace::broker
