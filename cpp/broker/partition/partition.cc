#include "broker/partition/partition.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "broker/base/kafka_error.h"
#include "broker/partition/producer_snapshot.h"
#include "common/file_slice.h"
#include "common/logging.h"
#include "headrace/record_batch.h"

namespace headrace::broker {
namespace {

// Stamps `epoch` into every batch's header (the field is not covered by the
// CRC); stops at the first batch whose length field does not fit, which the
// Log then rejects. Reads the length (int32 after the base offset) by hand
// because the batches are not validated yet.
void StampLeaderEpoch(std::span<uint8_t> bytes, LeaderEpoch epoch) {
  size_t pos = 0;
  while (pos + kBatchHeaderSize <= bytes.size()) {
    const uint8_t* l = bytes.data() + pos + 8;
    int64_t len = (int64_t{l[0]} << 24) | (int64_t{l[1]} << 16) | (int64_t{l[2]} << 8) | l[3];
    size_t total = kBatchLogOverhead + static_cast<size_t>(len);
    if (len < kBatchHeaderSize - kBatchLogOverhead || pos + total > bytes.size()) return;
    SetPartitionLeaderEpoch(bytes.subspan(pos, total), epoch);
    pos += total;
  }
}

// Headers of the batches in `bytes` when at least one is an idempotent
// producer's (IsIdempotentBatch) or a control batch; empty otherwise,
// without allocating. Batches that do not parse are left to the Log to
// reject.
std::vector<BatchHeader> ProducerBatchHeaders(std::span<const uint8_t> bytes) {
  std::vector<BatchHeader> headers;
  bool any = false;
  for (int pass = 0; pass < 2 && (pass == 0 || any); ++pass) {
    size_t pos = 0;
    while (pos < bytes.size()) {
      Result<BatchHeader> h = ParseBatchHeader(bytes.subspan(pos));
      if (!h.ok()) break;
      if (pass == 0) any = any || IsIdempotentBatch(*h) || h->is_control();
      else headers.push_back(*h);
      pos += static_cast<size_t>(h->total_size());
    }
  }
  return headers;
}

bool Contains(const std::vector<int32_t>& ids, int32_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

}  // namespace

LogFactory DefaultLogFactory() {
  return [](const std::string& dir, const LogConfig& config) { return Log::Open(dir, config); };
}

Result<std::shared_ptr<Partition>> Partition::Open(const std::string& data_dir,
                                                   const TopicPartition& tp, const Uuid& topic_id,
                                                   const TopicSettings& settings,
                                                   const PartitionServices& services,
                                                   const LogFactory& factory) {
  HR_ASSIGN_OR_RETURN(std::unique_ptr<Log> log,
                      factory(PartitionDirPath(data_dir, tp), PartitionLogConfig(settings.log)));
  auto partition = std::make_shared<Partition>(tp, topic_id, std::move(log), settings, services);
  {
    std::lock_guard<std::mutex> lock(partition->mu_);
    HR_RETURN_IF_ERROR(partition->LoadEpochCacheLocked());
    {
      std::lock_guard<std::mutex> index_lock(partition->txn_index_mu_);
      HR_RETURN_IF_ERROR(partition->txn_index_.Load());
      partition->txn_index_.DropSegmentsBefore(partition->log_->segment_base_offsets().front());
      // Entries written ahead of markers that recovery cut off.
      partition->txn_index_.TruncateFrom(partition->log_->end_offset());
      partition->aborted_count_.store(partition->txn_index_.size());
    }
    // Eagerly: the ongoing transactions bound the LSO from the start.
    partition->snapshots_ = true;
    HR_RETURN_IF_ERROR(partition->EnsureProducerStateLocked());
    partition->active_segment_base_ = partition->log_->active_segment_base();
    partition->PublishLastStableLocked();
  }
  partition->MaybeScheduleFlush();
  return partition;
}

Partition::Partition(TopicPartition tp, Uuid topic_id, std::unique_ptr<Log> log,
                     const TopicSettings& settings, const PartitionServices& services)
    : tp_(std::move(tp)),
      topic_id_(topic_id),
      log_(std::move(log)),
      services_(services),
      topic_metrics_(services.metrics ? services.metrics->ForTopic(tp_.topic) : nullptr),
      leader_id_(services.local_broker_id),
      epoch_cache_(""),
      txn_index_(log_->dir(), services.file_env) {
  replicas_.push_back({services.local_broker_id, log_->end_offset(), log_->flushed_offset()});
  isr_.push_back(services.local_broker_id);
  PublishViewLocked();
  Offset hw = services.commit_requires_fsync ? std::min(log_->flushed_offset(), log_->end_offset())
                                             : log_->end_offset();
  high_watermark_.store(hw.value());
  last_stable_offset_.store(hw.value());
  retention_delete_.store(settings.cleanup_delete);
  min_insync_replicas_.store(settings.min_insync_replicas);
  SetCompactionSettings(settings);
  SetThrottleSettings(settings);
  (void)epoch_cache_.Assign(LeaderEpoch(0), log_->end_offset());  // in memory only
}

Partition::~Partition() = default;

void Partition::StartHighWatermarkAt(Offset checkpointed) {
  std::lock_guard<std::mutex> lock(mu_);
  Offset hw = std::min(checkpointed, log_->end_offset());
  if (services_.commit_requires_fsync) hw = std::min(hw, log_->flushed_offset());
  hw = std::max(hw, log_->start_offset());
  high_watermark_.store(hw.value(), std::memory_order_release);
  PublishLastStableLocked();
}

Offset Partition::watermark(Watermark which) const {
  switch (which) {
    case Watermark::kLogEnd: return log_end_offset();
    case Watermark::kFlushed: return flushed_offset();
    case Watermark::kHighWatermark: return high_watermark();
    case Watermark::kLastStable: return last_stable_offset();
  }
  return Offset(-1);
}

WatermarkSet Partition::RecomputeLocked(Offset log_end_before, Offset flushed_before) {
  WatermarkSet changed = 0;
  const Offset leo = log_->end_offset();
  const Offset flushed = log_->flushed_offset();
  if (leo > log_end_before) changed |= WatermarkBit(Watermark::kLogEnd);
  if (flushed > flushed_before) changed |= WatermarkBit(Watermark::kFlushed);
  replicas_.front().log_end = leo;
  replicas_.front().flushed = flushed;
  // A follower's HW comes from its leader; its LSO may still move (a
  // marker it appended ends a transaction).
  if (!is_leader()) return changed | PublishLastStableLocked();
  Offset hw = leo;
  for (const ReplicaState& r : replicas_) {
    if (!Contains(isr_, r.broker_id)) continue;
    hw = std::min(hw, r.log_end);
    if (services_.commit_requires_fsync) hw = std::min(hw, r.flushed);
  }
  if (hw.value() > high_watermark_.load(std::memory_order_relaxed)) {
    high_watermark_.store(hw.value(), std::memory_order_release);
    changed |= WatermarkBit(Watermark::kHighWatermark);
  }
  return changed | PublishLastStableLocked();
}

WatermarkSet Partition::PublishLastStableLocked() {
  const Offset hw = high_watermark();
  Offset lso = hw;
  if (std::optional<Offset> first = producer_state_.first_unstable_offset()) {
    lso = std::min(lso, *first);
  }
  // Transactions whose marker is committed are stable.
  std::erase_if(unreplicated_txns_, [&](const auto& t) { return t.second < hw; });
  if (!unreplicated_txns_.empty()) lso = std::min(lso, unreplicated_txns_.begin()->first);
  const int64_t before = last_stable_offset_.load(std::memory_order_relaxed);
  if (lso.value() == before) return 0;
  last_stable_offset_.store(lso.value(), std::memory_order_release);
  return lso.value() > before ? WatermarkBit(Watermark::kLastStable) : WatermarkSet(0);
}

void Partition::AfterChange(WatermarkSet changed, bool state_changed) {
  if (state_changed) state_version_.fetch_add(1, std::memory_order_acq_rel);
  if (services_.listener) {
    if (state_changed) services_.listener->OnStateChanged(*this);
    else if (changed) services_.listener->OnWatermarksAdvanced(*this, changed);
  }
}

void Partition::ScheduleFlush() {
  if (!services_.flusher || offline()) return;
  if (flush_scheduled_.exchange(true, std::memory_order_acq_rel)) return;  // already queued
  services_.flusher->Schedule(shared_from_this());
}

void Partition::MaybeScheduleFlush() {
  if (log_->end_offset() > log_->flushed_offset() &&
      (services_.commit_requires_fsync || log_->FlushDue())) {
    ScheduleFlush();
  }
}

Status Partition::CheckServing() const {
  if (!offline()) return Status::OK();
  return KafkaStatus(KafkaError::kKafkaStorageError,
                     tp_.ToString() + " is offline after a storage error");
}

Status Partition::GoOffline(const Status& cause) {
  if (!offline_.exchange(true)) {  // the first failure
    // A failed log said so itself, once, with the path and errno.
    if (!log_->failed()) {
      HR_LOG(kError) << "partition " << tp_.ToString() << " (" << log_->dir()
                     << ") is offline: " << cause.ToString()
                     << "; nothing after the failure is acknowledged; restart to recover";
    }
    AfterChange(0, /*state_changed=*/true);
    if (services_.on_offline) services_.on_offline(*this);
  }
  return KafkaStatus(KafkaError::kKafkaStorageError, tp_.ToString() + ": " + cause.message());
}

Result<AppendInfo> Partition::AppendAsLeader(std::span<uint8_t> batches, int16_t required_acks) {
  std::unique_lock<std::mutex> lock(mu_);
  HR_RETURN_IF_ERROR(CheckServing());
  if (!is_leader()) {
    return KafkaStatus(KafkaError::kNotLeaderOrFollower,
                       "this broker is not the leader of " + tp_.ToString());
  }
  const int32_t min_isr = min_insync_replicas_.load();
  if (required_acks == -1 && static_cast<int32_t>(isr_.size()) < min_isr) {
    return KafkaStatus(KafkaError::kNotEnoughReplicas,
                       tp_.ToString() + " has " + std::to_string(isr_.size()) +
                           " in-sync replica(s), min.insync.replicas is " + std::to_string(min_isr));
  }
  StampLeaderEpoch(batches, leader_epoch());
  std::vector<BatchHeader> producer_batches = ProducerBatchHeaders(batches);
  for (const BatchHeader& h : producer_batches) {
    if (h.is_control()) {
      return KafkaStatus(KafkaError::kInvalidRecord,
                         "clients may not write control batches to " + tp_.ToString());
    }
  }
  if (!producer_batches.empty()) {
    Result<std::optional<AppendInfo>> dup = CheckProducerStateLocked(producer_batches);
    if (!dup.ok()) return dup.status();
    if (dup->has_value()) return **dup;  // already appended: answer the original offsets
  }
  const Offset leo_before = log_->end_offset(), flushed_before = log_->flushed_offset();
  Result<AppendInfo> info = log_->Append(batches);
  if (info.ok() && topic_metrics_) topic_metrics_->AddProduced(info->bytes, info->record_count);
  return FinishAppend(lock, std::move(info), leo_before, flushed_before, [&] {
    // The log assigned the base offsets in place; record them.
    if (!producer_batches.empty()) ApplyProducerBatchesLocked(batches);
    return Status::OK();
  });
}

Result<AppendInfo> Partition::FinishAppend(std::unique_lock<std::mutex>& lock,
                                           Result<AppendInfo> info, Offset leo_before,
                                           Offset flushed_before,
                                           const std::function<Status()>& record) {
  if (!info.ok()) {
    if (info.status().code() != StatusCode::kIOError) return info;
    lock.unlock();
    return GoOffline(info.status());
  }
  HR_RETURN_IF_ERROR(record());
  const bool snapshot = MaybeSnapshotAfterRollLocked();
  WatermarkSet changed = RecomputeLocked(leo_before, flushed_before);
  lock.unlock();
  if (snapshot) ScheduleFlush();
  ScheduleFlushAfter(*info);
  AfterChange(changed, false);
  return info;
}

Result<std::optional<AppendInfo>> Partition::CheckProducerStateLocked(
    std::span<const BatchHeader> headers) {
  HR_RETURN_IF_ERROR(EnsureProducerStateLocked());
  HR_ASSIGN_OR_RETURN(ProducerStateTable::Verdict verdict, producer_state_.CheckAppend(headers));
  if (!verdict.duplicate) return std::optional<AppendInfo>();
  AppendInfo info;
  info.base_offset = verdict.original.first_offset;
  info.last_offset = verdict.original.last_offset;
  info.offset_of_max_timestamp = Offset(-1);
  return std::optional<AppendInfo>(info);
}

bool Partition::WaitFlushed(Offset offset,
                            std::chrono::steady_clock::time_point deadline) const {
  std::unique_lock<std::mutex> l(flush_wait_mu_);
  return flush_wait_cv_.wait_until(l, deadline,
                                   [&] { return offline() || flushed_offset() >= offset; }) &&
         !offline();
}

void Partition::NotifyFlushWaiters() const {
  { std::lock_guard<std::mutex> l(flush_wait_mu_); }  // a waiter between its check and its wait
  flush_wait_cv_.notify_all();
}

Status Partition::FlushLog() {
  Status st = FlushLogOnce();
  NotifyFlushWaiters();
  return st;
}

Status Partition::FlushLogOnce() {
  flush_scheduled_.store(false, std::memory_order_release);  // appends from now on reschedule
  if (offline()) return CheckServing();
  // The epoch file first, so that it is durable before the data it
  // describes; written outside mu_ (appends do not wait for its fsync).
  std::optional<std::string> epochs;
  std::optional<std::pair<Offset, std::string>> snapshot;
  {
    std::lock_guard<std::mutex> lock(mu_);
    epochs = epoch_cache_.TakeDirtyFile();
    snapshot = std::move(pending_snapshot_);
    pending_snapshot_.reset();
  }
  const uint64_t state_at_take = state_version();
  Status st = epochs ? epoch_cache_.WriteFile(*epochs) : Status::OK();
  // The aborted-transaction index before the markers it describes: before
  // the fsync, and again after it for markers appended meanwhile (which the
  // fsync may have covered), before the new flushed offset is published.
  if (st.ok()) st = WriteTxnIndex();
  if (st.ok()) st = log_->Flush();
  if (st.ok()) st = WriteTxnIndex();
  if (!st.ok()) {
    if (st.code() == StatusCode::kClosed) return st;
    return GoOffline(st);
  }
  WatermarkSet changed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Offset before = replicas_.front().flushed;
    changed = RecomputeLocked(log_->end_offset(), before);
    // A snapshot names what is below its offset: only once that is flushed
    // (a truncation since then dropped it or made it wrong).
    if (snapshot && (snapshot->first > log_->flushed_offset() ||
                     state_version() != state_at_take)) {
      snapshot.reset();
    }
  }
  AfterChange(changed, false);
  WritePendingSnapshot(std::move(snapshot));
  return Status::OK();
}

Result<PartitionRead> Partition::Read(Offset offset, int64_t max_bytes, IsolationLevel isolation,
                                      bool min_one_batch) const {
  return ReadUpTo(offset, max_bytes, min_one_batch,
                  isolation == IsolationLevel::kReadCommitted ? Watermark::kLastStable
                                                              : Watermark::kHighWatermark);
}

Result<PartitionRead> Partition::ReadForFollower(Offset offset, int64_t max_bytes,
                                                 bool min_one_batch) const {
  return ReadUpTo(offset, max_bytes, min_one_batch, Watermark::kLogEnd);
}

Result<PartitionRead> Partition::ReadUpTo(Offset offset, int64_t max_bytes, bool min_one_batch,
                                          Watermark limit) const {
  HR_RETURN_IF_ERROR(CheckServing());
  PartitionRead r;
  // The HW first: it never passes the LEO read after it.
  r.high_watermark = high_watermark();
  // Published after the HW: bounded by the HW read, so the answer never
  // shows an LSO above its HW.
  r.last_stable_offset = std::min(last_stable_offset(), r.high_watermark);
  r.log_start_offset = log_->start_offset();
  r.log_end_offset = log_->end_offset();
  r.data.first_batch_base = Offset(-1);
  if (offset < r.log_start_offset || offset > r.log_end_offset) {
    return Status::OutOfRange("offset " + std::to_string(offset.value()) + " is outside [" +
                              std::to_string(r.log_start_offset.value()) + ", " +
                              std::to_string(r.log_end_offset.value()) + "] of " +
                              tp_.ToString());
  }
  const Offset bound = limit == Watermark::kLogEnd        ? r.log_end_offset
                       : limit == Watermark::kLastStable ? r.last_stable_offset
                                                         : r.high_watermark;
  if (offset >= bound) return r;
  HR_ASSIGN_OR_RETURN(r.data, log_->Read(offset, max_bytes, bound, min_one_batch));
  if (limit == Watermark::kLastStable && !r.data.slices.empty() &&
      aborted_count_.load(std::memory_order_acquire) > 0) {
    // Bounded by the LSO rather than the end of the last batch returned:
    // a superset of Kafka's list, which clients filter by offset anyway.
    std::lock_guard<std::mutex> lock(txn_index_mu_);
    r.aborted_transactions = txn_index_.Collect(offset, bound);
  }
  return r;
}

OffsetAndTimestamp Partition::EarliestOffset() const {
  return {log_->start_offset(), kNoTimestamp};
}

OffsetAndTimestamp Partition::LatestOffset(IsolationLevel isolation) const {
  return {isolation == IsolationLevel::kReadCommitted ? last_stable_offset() : high_watermark(),
          kNoTimestamp};
}

Result<OffsetAndTimestamp> Partition::ListOffset(int64_t timestamp,
                                                 IsolationLevel isolation) const {
  HR_RETURN_IF_ERROR(CheckServing());  // offline: KAFKA_STORAGE_ERROR, as Kafka
  if (timestamp == kListOffsetsEarliest || timestamp == kListOffsetsEarliestLocal) {
    return EarliestOffset();
  }
  if (timestamp == kListOffsetsLatest) return LatestOffset(isolation);
  Offset bound = LatestOffset(isolation).offset;
  if (timestamp == kListOffsetsMaxTimestamp) {
    auto max = log_->MaxTimestamp();
    if (!max.ok()) {
      if (max.status().code() == StatusCode::kNotFound) return OffsetAndTimestamp{};
      return max.status();
    }
    if (max->second >= bound) return OffsetAndTimestamp{};
    return OffsetAndTimestamp{max->second, max->first};
  }
  if (timestamp < 0) {
    return Status::InvalidArgument("ListOffsets timestamp " + std::to_string(timestamp) +
                                   " is not supported");
  }
  auto found = log_->OffsetForTime(TimestampMs(timestamp));
  if (!found.ok()) {
    if (found.status().code() == StatusCode::kNotFound) return OffsetAndTimestamp{};
    return found.status();
  }
  if (found->first >= bound) return OffsetAndTimestamp{};
  return OffsetAndTimestamp{found->first, found->second};
}

Result<Offset> Partition::DeleteRecordsBefore(Offset offset) {
  std::lock_guard<std::mutex> lock(mu_);
  Offset hw = high_watermark();
  if (offset.value() == -1) offset = hw;
  if (offset > hw || offset.value() < 0) {
    return Status::OutOfRange("DeleteRecords offset " + std::to_string(offset.value()) +
                              " is outside [0, high watermark " + std::to_string(hw.value()) +
                              "] of " + tp_.ToString());
  }
  if (offset > log_->start_offset()) HR_RETURN_IF_ERROR(log_->DeleteRecordsBefore(offset));
  HR_RETURN_IF_ERROR(epoch_cache_.TruncateFromStart(log_->start_offset()));
  {
    std::lock_guard<std::mutex> index_lock(txn_index_mu_);
    txn_index_.DropSegmentsBefore(log_->segment_base_offsets().front());
    aborted_count_.store(txn_index_.size());
  }
  return log_->start_offset();
}

Status Partition::MaybeRoll(TimestampMs now) {
  HR_RETURN_IF_ERROR(log_->MaybeRoll(now));
  bool snapshot;
  {
    std::lock_guard<std::mutex> lock(mu_);
    snapshot = MaybeSnapshotAfterRollLocked();
  }
  if (snapshot) ScheduleFlush();
  return Status::OK();
}

void Partition::LogRetentionDeletion(const RetentionReport& report) const {
  std::string bases;
  for (int64_t b : report.deleted_base_offsets) {
    if (!bases.empty()) bases += ',';
    bases += std::to_string(b);
  }
  const int by_size = report.segments_deleted - report.segments_by_time;
  const char* reason = report.segments_by_time == 0 ? "retention.bytes"
                       : by_size == 0               ? "retention.ms"
                                                    : "retention.ms,retention.bytes";
  HR_LOG_TO(kInfo, "headrace.retention")
          .With("event", "retention_deleted").With("topic", tp_.topic)
          .With("partition", tp_.partition).With("segments", report.segments_deleted)
          .With("base_offsets", bases).With("bytes", report.bytes_deleted)
          .With("reason", reason).With("log_start_offset", report.new_start_offset.value())
      << "retention deleted " << report.segments_deleted << " segment(s) of "
      << tp_.ToString() << " (base offsets " << bases << ", " << report.bytes_deleted
      << " bytes) by " << reason << "; log start offset now "
      << report.new_start_offset.value();
}

Result<RetentionReport> Partition::ApplyRetention(TimestampMs now) {
  if (!retention_delete_.load()) {
    RetentionReport none;
    none.new_start_offset = log_->start_offset();
    return none;
  }
  HR_ASSIGN_OR_RETURN(RetentionReport report, log_->ApplyRetention(now));
  if (report.segments_deleted > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    HR_RETURN_IF_ERROR(epoch_cache_.TruncateFromStart(log_->start_offset()));
    std::lock_guard<std::mutex> index_lock(txn_index_mu_);
    txn_index_.DropSegmentsBefore(log_->segment_base_offsets().front());
    aborted_count_.store(txn_index_.size());
  }
  if (report.segments_deleted > 0) LogRetentionDeletion(report);
  return report;
}

void Partition::SetSettings(const TopicSettings& settings) {
  log_->SetConfig(PartitionLogConfig(settings.log));
  retention_delete_.store(settings.cleanup_delete);
  min_insync_replicas_.store(settings.min_insync_replicas);
  SetCompactionSettings(settings);
  SetThrottleSettings(settings);
}

Status Partition::Close() {
  Status index = offline() ? Status::OK() : WriteTxnIndex();
  Status closed = log_->Close();
  if (closed.ok() && !index.ok()) closed = index;
  if (closed.ok() && !offline()) {
    // A clean close snapshots the producer state at the (flushed) LEO.
    std::optional<std::pair<Offset, std::string>> snapshot;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (snapshots_ && producer_state_.loaded()) {
        snapshot.emplace(log_->end_offset(), EncodeProducerSnapshot(producer_state_));
      }
    }
    WritePendingSnapshot(std::move(snapshot));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed.ok() && !offline()) closed = epoch_cache_.Flush();
  }
  AfterChange(0, /*state_changed=*/true);
  return closed;
}

Status Partition::Abandon() {
  Status st = log_->Abandon();
  AfterChange(0, /*state_changed=*/true);
  return st;
}

}  // namespace headrace::broker
