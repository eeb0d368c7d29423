// The partition's transactional side (KIP-98): end-transaction markers, the
// producer state and ongoing transactions that bound the LSO, and the
// aborted-transaction index (txn_index.h). Offsets policy: partition.cc.
#include <algorithm>
#include <limits>
#include <string>

#include "broker/base/kafka_error.h"
#include "broker/partition/partition.h"
#include "broker/partition/producer_snapshot.h"
#include "common/file_env.h"
#include "common/logging.h"
#include "headrace/record_batch.h"

namespace headrace::broker {

Result<AppendInfo> Partition::AppendTxnMarker(int64_t producer_id, int16_t producer_epoch,
                                              int32_t coordinator_epoch, bool commit) {
  std::unique_lock<std::mutex> lock(mu_);
  HR_RETURN_IF_ERROR(CheckServing());
  if (!is_leader()) {
    return KafkaStatus(KafkaError::kNotLeaderOrFollower,
                       "this broker is not the leader of " + tp_.ToString());
  }
  HR_RETURN_IF_ERROR(EnsureProducerStateLocked());
  HR_RETURN_IF_ERROR(producer_state_.CheckMarker(producer_id, producer_epoch, coordinator_epoch));
  std::string batch =
      BuildEndTxnMarkerBatch(producer_id, producer_epoch, {commit, coordinator_epoch});
  std::span<uint8_t> bytes(reinterpret_cast<uint8_t*>(batch.data()), batch.size());
  SetPartitionLeaderEpoch(bytes, leader_epoch());
  const Offset leo_before = log_->end_offset(), flushed_before = log_->flushed_offset();
  return FinishAppend(lock, log_->Append(bytes), leo_before, flushed_before, [&] {
    ApplyProducerBatchesLocked(bytes);  // the log assigned the offset in place
    return Status::OK();
  });
}

Status Partition::EnsureProducerStateLocked() {
  if (producer_state_.loaded()) return Status::OK();
  auto index = [this](const CompletedTxn& txn) { IndexCompletedTxnLocked(txn); };
  Offset from(-1);
  if (snapshots_) {
    HR_ASSIGN_OR_RETURN(from, LoadNewestProducerSnapshot(file_env(), log_->dir(),
                                                         log_->end_offset(), &producer_state_));
  }
  if (from.value() >= 0) {
    // The tail after the snapshot, headers only.
    HR_RETURN_IF_ERROR(ReplayProducerState(*log_, from, &producer_state_, index));
  } else {
    // No snapshot: every batch from the log start.
    HR_RETURN_IF_ERROR(RebuildProducerState(*log_, &producer_state_,
                                            std::numeric_limits<int64_t>::max(), index));
  }
  producer_state_.set_loaded();
  return Status::OK();
}

FileEnv& Partition::file_env() const {
  return services_.file_env ? *services_.file_env : *FileEnv::Default();
}

bool Partition::MaybeSnapshotAfterRollLocked() {
  if (!snapshots_ || !producer_state_.loaded()) return false;
  const Offset active = log_->active_segment_base();
  if (active == active_segment_base_) return false;
  const bool first_check = active_segment_base_.value() < 0;
  active_segment_base_ = active;
  if (first_check) return false;
  pending_snapshot_.emplace(log_->end_offset(), EncodeProducerSnapshot(producer_state_));
  return true;
}

void Partition::WritePendingSnapshot(std::optional<std::pair<Offset, std::string>> pending) {
  if (!pending) return;
  Status st = WriteProducerSnapshot(file_env(), log_->dir(), pending->first, pending->second);
  if (!st.ok()) {
    HR_LOG(kWarn) << "partition " << tp_.ToString() << ": producer snapshot at "
                  << pending->first.value() << " not written: " << st.ToString();
  }
}

size_t Partition::RemoveExpiredProducers(int64_t now_ms, int64_t expiration_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  return producer_state_.RemoveExpired(now_ms, expiration_ms);
}

void Partition::ApplyProducerBatchesLocked(std::span<const uint8_t> bytes) {
  size_t pos = 0;
  while (pos < bytes.size()) {
    Result<BatchHeader> h = ParseBatchHeader(bytes.subspan(pos));
    if (!h.ok()) break;
    const std::span<const uint8_t> batch = bytes.subspan(pos, static_cast<size_t>(h->total_size()));
    pos += static_cast<size_t>(h->total_size());
    if (IsTxnMarkerBatch(*h)) {
      Result<EndTxnMarker> marker = ParseEndTxnMarker(batch);
      if (!marker.ok()) continue;  // another control type: no transaction ends
      IndexCompletedTxnLocked(producer_state_.UpdateMarker(*h, *marker));
    } else if (IsIdempotentBatch(*h)) {
      producer_state_.Update(*h);
    }
  }
}

void Partition::IndexCompletedTxnLocked(const CompletedTxn& txn) {
  if (txn.first_offset.value() < 0) return;  // no transaction was open
  // Still unstable until its marker is committed (PublishLastStableLocked).
  if (txn.last_offset >= high_watermark()) unreplicated_txns_[txn.first_offset] = txn.last_offset;
  if (txn.commit) return;  // nothing was aborted
  // Kafka's "last stable offset at the abort": the first offset still
  // unstable once this transaction ended, else just past the marker.
  const Offset lso = producer_state_.first_unstable_offset().value_or(txn.last_offset + 1);
  Offset segment_base(0);
  for (Offset base : log_->segment_base_offsets()) {
    if (base <= txn.last_offset) segment_base = base;
  }
  std::lock_guard<std::mutex> lock(txn_index_mu_);
  txn_index_.Append(segment_base, {txn.producer_id, txn.first_offset, txn.last_offset, lso});
  aborted_count_.store(txn_index_.size(), std::memory_order_release);
}

Status Partition::WriteTxnIndex() {
  std::lock_guard<std::mutex> serial(txn_index_write_mu_);
  AbortedTxnIndex::FileWrites writes;
  {
    std::lock_guard<std::mutex> lock(txn_index_mu_);
    if (!txn_index_.dirty()) return Status::OK();
    writes = txn_index_.TakeDirty();
  }
  return WriteTxnIndexFiles(writes);
}

std::vector<OngoingTxn> Partition::ongoing_transactions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return producer_state_.ongoing();
}

std::vector<AbortedTxn> Partition::aborted_transactions() const {
  std::lock_guard<std::mutex> lock(txn_index_mu_);
  return txn_index_.Collect(Offset(0), Offset(std::numeric_limits<int64_t>::max()));
}

std::vector<ProducerDescription> Partition::DescribeProducers() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ProducerDescription> out;
  for (const auto& [pid, e] : producer_state_.entries()) {
    ProducerDescription d;
    d.producer_id = pid;
    d.producer_epoch = e.epoch;
    d.last_sequence = e.count > 0 ? e.last().last_seq : -1;
    d.last_timestamp = e.last_timestamp.value();
    d.coordinator_epoch = e.coordinator_epoch;
    d.current_txn_start_offset = e.current_txn_first_offset.value();
    out.push_back(d);
  }
  std::sort(out.begin(), out.end(), [](const ProducerDescription& a, const ProducerDescription& b) {
    return a.producer_id < b.producer_id;
  });
  return out;
}

}  // namespace headrace::broker
