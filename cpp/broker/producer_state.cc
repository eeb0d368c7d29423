#include "broker/producer_state.h"

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

// Applies `h` to `entry` (the Update rule for one entry).
void Apply(ProducerEntry& entry, const BatchHeader& h) {
  if (entry.count > 0 && h.producer_epoch < entry.epoch) return;
  if (entry.count == 0 || h.producer_epoch > entry.epoch) {
    entry = ProducerEntry{};
    entry.epoch = h.producer_epoch;
  }
  entry.Push(BatchOf(h));
}

}  // namespace

Status ProducerStateTable::CheckOne(const ProducerEntry* entry, const BatchHeader& h,
                                    bool* duplicate, ProducerBatch* original) {
  *duplicate = false;
  if (entry == nullptr || entry->count == 0) return Status::OK();  // unknown: accept
  if (h.producer_epoch < entry->epoch) {
    return KafkaStatus(KafkaError::kInvalidProducerEpoch,
                       Describe(h) + ": the producer's epoch is " + std::to_string(entry->epoch));
  }
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

void ProducerStateTable::Update(const BatchHeader& h) {
  if (!IsIdempotentBatch(h)) return;
  Apply(producers_[h.producer_id], h);
}

const ProducerEntry* ProducerStateTable::Find(int64_t producer_id) const {
  auto it = producers_.find(producer_id);
  return it == producers_.end() ? nullptr : &it->second;
}

}  // namespace headrace::broker
