// Partition's part in log compaction (docs/compaction.md): the topic's
// compaction settings, and what only the partition knows of a cleaning
// pass: how far it may go (min(HW, LSO): no uncommitted record and no open
// transaction is ever cleaned), which transactions were aborted (the
// .txnindex) and each producer's last batch (kept whole so that its
// sequence survives, as Kafka does).
#include <climits>

#include "broker/base/kafka_error.h"
#include "broker/partition/partition.h"

namespace headrace::broker {

void Partition::SetCompactionSettings(const TopicSettings& settings) {
  std::lock_guard<std::mutex> l(compaction_mu_);
  compaction_.compact = settings.cleanup_compact;
  compaction_.segment_bytes = settings.log.segment_bytes;
  compaction_.min_cleanable_dirty_ratio = settings.min_cleanable_dirty_ratio;
  compaction_.delete_retention_ms = settings.delete_retention_ms;
  compaction_.min_compaction_lag_ms = settings.min_compaction_lag_ms;
  compaction_.max_compaction_lag_ms = settings.max_compaction_lag_ms;
}

Partition::CompactionSettings Partition::compaction_settings() const {
  std::lock_guard<std::mutex> l(compaction_mu_);
  return compaction_;
}

Status Partition::FillCleanRequest(CleanRequest* req) {
  HR_RETURN_IF_ERROR(CheckServing());
  req->clean_below = std::min(high_watermark(), last_stable_offset());
  {
    std::lock_guard<std::mutex> lock(mu_);
    HR_RETURN_IF_ERROR(EnsureProducerStateLocked());
    req->producer_last_offsets.clear();
    for (const auto& [pid, entry] : producer_state_.entries())
      if (entry.count > 0) req->producer_last_offsets[pid] = entry.last().last_offset.value();
  }
  std::lock_guard<std::mutex> index_lock(txn_index_mu_);
  req->aborted.clear();
  for (const AbortedTxn& a : txn_index_.Collect(Offset(0), Offset(INT64_MAX)))
    req->aborted.push_back({a.producer_id, a.first_offset, a.last_offset});
  return Status::OK();
}

Result<CleanableState> Partition::Cleanable(const CleanRequest& req) const {
  HR_RETURN_IF_ERROR(CheckServing());
  return log_->Cleanable(req);
}

Result<CleanReport> Partition::Clean(const CleanRequest& req) {
  HR_RETURN_IF_ERROR(CheckServing());
  Result<CleanReport> r = log_->Clean(req);
  if (!r.ok() && log_->failed()) return GoOffline(r.status());
  if (!r.ok() || !r->cleaned) return r;
  // ABORT markers the pass removed leave the aborted-transaction index, and
  // the .txnindex files are rewritten now (not at the next flush), so that
  // read_committed consumers never wait for a marker that is gone.
  size_t forgotten = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::lock_guard<std::mutex> index_lock(txn_index_mu_);
    forgotten = txn_index_.ForgetRemovedMarkers(r->first_dirty_after, r->abort_markers_kept);
    aborted_count_.store(txn_index_.size());
  }
  if (forgotten > 0) HR_RETURN_IF_ERROR(WriteTxnIndex());
  return r;
}

}  // namespace headrace::broker
