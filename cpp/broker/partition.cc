#include "broker/partition.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "broker/kafka_error.h"
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
// producer's (IsIdempotentBatch); empty otherwise, without allocating.
// Batches that do not parse are left to the Log to reject.
std::vector<BatchHeader> ProducerBatchHeaders(std::span<const uint8_t> bytes) {
  std::vector<BatchHeader> headers;
  bool any = false;
  for (int pass = 0; pass < 2 && (pass == 0 || any); ++pass) {
    size_t pos = 0;
    while (pos < bytes.size()) {
      Result<BatchHeader> h = ParseBatchHeader(bytes.subspan(pos));
      if (!h.ok()) break;
      if (pass == 0) any = any || IsIdempotentBatch(*h);
      else headers.push_back(*h);
      pos += static_cast<size_t>(h->total_size());
    }
  }
  return headers;
}


// Headers of every batch in `bytes` (already validated by the caller's
// append, or parsed up to the first bad one).
std::vector<BatchHeader> AllBatchHeaders(std::span<const uint8_t> bytes) {
  std::vector<BatchHeader> headers;
  size_t pos = 0;
  while (pos < bytes.size()) {
    Result<BatchHeader> h = ParseBatchHeader(bytes.subspan(pos));
    if (!h.ok()) break;
    headers.push_back(*h);
    pos += static_cast<size_t>(h->total_size());
  }
  return headers;
}

// The header of the batch holding `offset`, read from the log.
Result<BatchHeader> BatchHeaderAt(const Log& log, Offset offset) {
  HR_ASSIGN_OR_RETURN(ReadResult r, log.Read(offset, kBatchHeaderSize, log.end_offset(), true));
  if (r.slices.empty()) return Status::NotFound("no batch at " + std::to_string(offset.value()));
  // The read returns whole batches: the first slice starts with the batch.
  std::vector<uint8_t> buf(static_cast<size_t>(r.slices.front().length));
  HR_RETURN_IF_ERROR(ReadSlices(std::span<const FileSlice>(&r.slices.front(), 1), buf.data()));
  return ParseBatchHeader(std::span<const uint8_t>(buf.data(), buf.size()));
}

// Every epoch change in the log, by reading each batch header from the
// start (recovery of a lost leader-epoch-checkpoint).
Result<std::vector<EpochEntry>> ScanEpochs(const Log& log) {
  std::vector<EpochEntry> out;
  Offset next = log.start_offset();
  while (next < log.end_offset()) {
    HR_ASSIGN_OR_RETURN(BatchHeader h, BatchHeaderAt(log, next));
    if (h.partition_leader_epoch >= 0 &&
        (out.empty() || h.partition_leader_epoch > out.back().epoch.value())) {
      out.push_back({LeaderEpoch(h.partition_leader_epoch), std::max(h.base_offset, next)});
    }
    next = h.last_offset() + 1;
  }
  return out;
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
  LogConfig config = settings.log;
  config.flush_on_append = false;  // the flusher fsyncs (MaybeScheduleFlush)
  HR_ASSIGN_OR_RETURN(std::unique_ptr<Log> log, factory(PartitionDirPath(data_dir, tp), config));
  auto partition = std::make_shared<Partition>(tp, topic_id, std::move(log), settings, services);
  {
    std::lock_guard<std::mutex> lock(partition->mu_);
    HR_RETURN_IF_ERROR(partition->LoadEpochCacheLocked());
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
      leader_id_(services.local_broker_id),
      epoch_cache_("") {
  replicas_.push_back({services.local_broker_id, log_->end_offset(), log_->flushed_offset()});
  isr_.push_back(services.local_broker_id);
  Offset hw = services.commit_requires_fsync ? std::min(log_->flushed_offset(), log_->end_offset())
                                             : log_->end_offset();
  high_watermark_.store(hw.value());
  retention_delete_.store(settings.cleanup_delete);
  min_insync_replicas_.store(settings.min_insync_replicas);
  (void)epoch_cache_.Assign(LeaderEpoch(0), log_->end_offset());  // in memory only
}

Partition::~Partition() = default;

Status Partition::LoadEpochCacheLocked() {
  epoch_cache_ = LeaderEpochCache(log_->dir(), services_.file_env);
  HR_ASSIGN_OR_RETURN(bool found, epoch_cache_.Load());
  if (!found && log_->end_offset() > log_->start_offset()) {
    // Lost or never written: the batches carry their epochs. The first and
    // last batch agreeing (every single-node log) spares a full scan.
    HR_ASSIGN_OR_RETURN(BatchHeader first, BatchHeaderAt(*log_, log_->start_offset()));
    HR_ASSIGN_OR_RETURN(BatchHeader last, BatchHeaderAt(*log_, log_->end_offset() - 1));
    std::vector<EpochEntry> entries;
    if (first.partition_leader_epoch == last.partition_leader_epoch) {
      if (first.partition_leader_epoch >= 0)
        entries.push_back({LeaderEpoch(first.partition_leader_epoch), log_->start_offset()});
    } else {
      HR_ASSIGN_OR_RETURN(entries, ScanEpochs(*log_));
    }
    epoch_cache_.Reset(std::move(entries));
  }
  // An entry past the log end is a stale tail (one at the end: an epoch that
  // has not written yet, kept).
  HR_RETURN_IF_ERROR(epoch_cache_.TruncateFromEnd(log_->end_offset() + 1));
  // A single-node partition leads its latest epoch from where it is.
  LeaderEpoch epoch(std::max(epoch_cache_.latest_epoch().value(), 0));
  leader_epoch_.store(epoch.value());
  return epoch_cache_.Assign(epoch, log_->end_offset());
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
  if (!is_leader()) return changed;  // a follower's HW comes from its leader
  Offset hw = leo;
  for (const ReplicaState& r : replicas_) {
    if (!Contains(isr_, r.broker_id)) continue;
    hw = std::min(hw, r.log_end);
    if (services_.commit_requires_fsync) hw = std::min(hw, r.flushed);
  }
  if (hw.value() > high_watermark_.load(std::memory_order_relaxed)) {
    high_watermark_.store(hw.value(), std::memory_order_release);
    changed |= WatermarkBit(Watermark::kHighWatermark) | WatermarkBit(Watermark::kLastStable);
  }
  return changed;
}

void Partition::AfterChange(WatermarkSet changed, bool state_changed) {
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
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!offline_.exchange(true)) {
      first = true;
      offline_cause_ = cause;
    }
  }
  if (first) {
    // A failed log said so itself, once, with the path and errno.
    if (!log_->failed()) {
      HR_LOG(kError) << "partition " << tp_.ToString() << " (" << log_->dir()
                     << ") is offline: " << cause.ToString()
                     << "; nothing after the failure is acknowledged; restart to recover";
    }
    AfterChange(0, /*state_changed=*/true);
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
  if (!producer_batches.empty()) {
    Result<std::optional<AppendInfo>> dup = CheckProducerStateLocked(producer_batches);
    if (!dup.ok()) return dup.status();
    if (dup->has_value()) return **dup;  // already appended: answer the original offsets
  }
  const Offset leo_before = log_->end_offset(), flushed_before = log_->flushed_offset();
  Result<AppendInfo> info = log_->Append(batches);
  if (!info.ok()) {
    if (info.status().code() != StatusCode::kIOError) return info;
    lock.unlock();
    return GoOffline(info.status());
  }
  if (!producer_batches.empty()) {
    // The log assigned the base offsets in place; record them.
    for (const BatchHeader& h : ProducerBatchHeaders(batches)) producer_state_.Update(h);
  }
  WatermarkSet changed = RecomputeLocked(leo_before, flushed_before);
  lock.unlock();
  MaybeScheduleFlush();
  AfterChange(changed, false);
  return info;
}

Result<std::optional<AppendInfo>> Partition::CheckProducerStateLocked(
    std::span<const BatchHeader> headers) {
  if (!producer_state_.loaded()) {
    HR_RETURN_IF_ERROR(RebuildProducerState(*log_, &producer_state_));
    producer_state_.set_loaded();
  }
  HR_ASSIGN_OR_RETURN(ProducerStateTable::Verdict verdict, producer_state_.CheckAppend(headers));
  if (!verdict.duplicate) return std::optional<AppendInfo>();
  AppendInfo info;
  info.base_offset = verdict.original.first_offset;
  info.last_offset = verdict.original.last_offset;
  info.offset_of_max_timestamp = Offset(-1);
  return std::optional<AppendInfo>(info);
}

void Partition::UpdateFollowerState(int32_t broker_id, Offset log_end, Offset flushed) {
  WatermarkSet changed = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (broker_id == services_.local_broker_id) return;
    auto it = std::find_if(replicas_.begin(), replicas_.end(),
                           [&](const ReplicaState& r) { return r.broker_id == broker_id; });
    if (it == replicas_.end()) return;
    it->log_end = std::min(log_end, log_->end_offset());
    it->flushed = std::min(flushed, it->log_end);
    const Offset leo = log_->end_offset(), fl = log_->flushed_offset();
    changed = RecomputeLocked(leo, fl);
  }
  AfterChange(changed, false);
}

Status Partition::AssignEpochsLocked(std::span<const uint8_t> batches) {
  for (const BatchHeader& h : AllBatchHeaders(batches)) {
    if (h.partition_leader_epoch > epoch_cache_.latest_epoch().value()) {
      HR_RETURN_IF_ERROR(epoch_cache_.Assign(LeaderEpoch(h.partition_leader_epoch), h.base_offset));
    }
  }
  return Status::OK();
}

Result<AppendInfo> Partition::AppendAsFollower(std::span<uint8_t> batches) {
  std::unique_lock<std::mutex> lock(mu_);
  HR_RETURN_IF_ERROR(CheckServing());
  if (is_leader()) {
    return KafkaStatus(KafkaError::kNotLeaderOrFollower,
                       "this broker leads " + tp_.ToString() + ": no follower append");
  }
  const Offset leo_before = log_->end_offset(), flushed_before = log_->flushed_offset();
  Result<AppendInfo> info = log_->AppendWithOffsets(batches);
  if (!info.ok()) {
    if (info.status().code() != StatusCode::kIOError) return info;
    lock.unlock();
    return GoOffline(info.status());
  }
  HR_RETURN_IF_ERROR(AssignEpochsLocked(batches));
  if (producer_state_.loaded()) {
    for (const BatchHeader& h : AllBatchHeaders(batches)) {
      if (IsIdempotentBatch(h)) producer_state_.Update(h);
    }
  }
  WatermarkSet changed = RecomputeLocked(leo_before, flushed_before);
  lock.unlock();
  MaybeScheduleFlush();
  AfterChange(changed, false);
  return info;
}

void Partition::SetHighWatermarkFromLeader(Offset leader_hw) {
  WatermarkSet changed = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (is_leader()) return;
    Offset hw = std::min(leader_hw, log_->end_offset());
    if (hw.value() > high_watermark_.load(std::memory_order_relaxed)) {
      high_watermark_.store(hw.value(), std::memory_order_release);
      changed = WatermarkBit(Watermark::kHighWatermark) | WatermarkBit(Watermark::kLastStable);
    }
  }
  AfterChange(changed, false);
}

Status Partition::TruncateTo(Offset offset) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    HR_RETURN_IF_ERROR(CheckServing());
    if (offset >= log_->end_offset()) return Status::OK();
    Status st = log_->Truncate(offset);
    if (!st.ok()) return st;
    const Offset leo = log_->end_offset();
    HR_RETURN_IF_ERROR(epoch_cache_.TruncateFromEnd(leo));
    producer_state_ = ProducerStateTable();  // rebuilt from the log on next use
    if (high_watermark_.load() > leo.value()) high_watermark_.store(leo.value());
    for (ReplicaState& r : replicas_) {
      r.log_end = std::min(r.log_end, leo);
      r.flushed = std::min(r.flushed, leo);
    }
  }
  AfterChange(0, /*state_changed=*/true);
  return Status::OK();
}

Result<TruncationResult> Partition::TruncateByEpoch(LeaderEpoch leader_epoch, Offset end_offset) {
  Offset target;
  bool completed = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const Offset leo = log_->end_offset();
    if (leader_epoch.value() == kUndefinedEpoch || end_offset.value() == kUndefinedEpochOffset) {
      // The leader knows no epoch this old: fall back to the high watermark.
      target = std::min(high_watermark(), leo);
    } else {
      EpochEndOffset mine = epoch_cache_.EndOffsetFor(leader_epoch, leo);
      if (mine.epoch.value() == kUndefinedEpoch) {
        target = std::min(end_offset, leo);
      } else if (mine.epoch != leader_epoch) {
        // We never had the leader's epoch: cut to where our older one ends
        // and ask again (KIP-279).
        target = std::min(mine.end_offset, leo);
        completed = false;
      } else {
        target = std::min({mine.end_offset, end_offset, leo});
      }
    }
    target = std::max(target, log_->start_offset());
  }
  HR_RETURN_IF_ERROR(TruncateTo(target));
  return TruncationResult{log_end_offset(), completed};
}

Status Partition::BecomeLeader(LeaderEpoch epoch, std::vector<int32_t> replicas,
                               std::vector<int32_t> isr) {
  WatermarkSet changed = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const int32_t self = services_.local_broker_id;
    if (!Contains(replicas, self) || !Contains(isr, self)) {
      return Status::InvalidArgument("broker " + std::to_string(self) +
                                     " is not in the replicas and ISR of " + tp_.ToString());
    }
    if (epoch < leader_epoch()) {
      return KafkaStatus(KafkaError::kFencedLeaderEpoch,
                         "leader epoch " + std::to_string(epoch.value()) + " is older than " +
                             std::to_string(leader_epoch().value()) + " of " + tp_.ToString());
    }
    HR_RETURN_IF_ERROR(epoch_cache_.Assign(epoch, log_->end_offset()));
    std::vector<ReplicaState> states;
    for (int32_t id : replicas) {
      if (id == self) states.insert(states.begin(), {self, log_->end_offset(), log_->flushed_offset()});
      else states.push_back({id, Offset(0), Offset(0)});
    }
    replicas_ = std::move(states);
    isr_ = std::move(isr);
    isr_size_.store(static_cast<int>(isr_.size()));
    leader_id_ = self;
    leader_epoch_.store(epoch.value());
    is_leader_.store(true, std::memory_order_release);
    // Followers' offsets are unknown until they fetch; the HW waits for them.
    changed = RecomputeLocked(log_->end_offset(), log_->flushed_offset());
  }
  AfterChange(changed, /*state_changed=*/true);
  return Status::OK();
}

Status Partition::BecomeFollower(LeaderEpoch epoch, int32_t leader_id,
                                 std::vector<int32_t> replicas) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (epoch < leader_epoch()) {
      return KafkaStatus(KafkaError::kFencedLeaderEpoch,
                         "leader epoch " + std::to_string(epoch.value()) + " is older than " +
                             std::to_string(leader_epoch().value()) + " of " + tp_.ToString());
    }
    std::vector<ReplicaState> states{{services_.local_broker_id, log_->end_offset(),
                                      log_->flushed_offset()}};
    for (int32_t id : replicas) {
      if (id != services_.local_broker_id) states.push_back({id, Offset(0), Offset(0)});
    }
    replicas_ = std::move(states);
    isr_.clear();
    isr_size_.store(0);
    leader_id_ = leader_id;
    leader_epoch_.store(epoch.value());
    is_leader_.store(false, std::memory_order_release);
  }
  AfterChange(0, /*state_changed=*/true);
  return Status::OK();
}

Status Partition::UpdateIsr(std::vector<int32_t> isr) {
  WatermarkSet changed = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!is_leader() || !Contains(isr, services_.local_broker_id)) {
      return Status::InvalidArgument("an ISR of " + tp_.ToString() +
                                     " must contain its leader, broker " +
                                     std::to_string(services_.local_broker_id));
    }
    isr_ = std::move(isr);
    isr_size_.store(static_cast<int>(isr_.size()));
    changed = RecomputeLocked(log_->end_offset(), log_->flushed_offset());
  }
  // A shrunk ISR can complete produces; a grown one can make them fail
  // min.insync.replicas: waiters re-check either way.
  AfterChange(changed, /*state_changed=*/true);
  return Status::OK();
}

int32_t Partition::leader_id() const {
  std::lock_guard<std::mutex> lock(mu_);
  return leader_id_;
}

std::vector<int32_t> Partition::replicas() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<int32_t> out;
  for (const ReplicaState& r : replicas_) out.push_back(r.broker_id);
  return out;
}

std::vector<int32_t> Partition::isr() const {
  std::lock_guard<std::mutex> lock(mu_);
  return isr_;
}

std::vector<EpochEntry> Partition::epoch_entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return epoch_cache_.entries();
}

EpochEndOffset Partition::EndOffsetForEpoch(LeaderEpoch epoch) const {
  std::lock_guard<std::mutex> lock(mu_);
  return epoch_cache_.EndOffsetFor(epoch, log_->end_offset());
}

LeaderEpoch Partition::EpochAt(Offset offset) const {
  std::lock_guard<std::mutex> lock(mu_);
  LeaderEpoch epoch(kUndefinedEpoch);
  for (const EpochEntry& e : epoch_cache_.entries()) {
    if (e.start_offset > offset) break;
    epoch = e.epoch;
  }
  return epoch;
}

Status Partition::FlushLog() {
  flush_scheduled_.store(false, std::memory_order_release);  // appends from now on reschedule
  if (offline()) return CheckServing();
  Status st = log_->Flush();
  if (st.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    st = epoch_cache_.Flush();
  }
  if (!st.ok()) {
    if (st.code() == StatusCode::kClosed) return st;
    return GoOffline(st);
  }
  WatermarkSet changed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Offset before = replicas_.front().flushed;
    changed = RecomputeLocked(log_->end_offset(), before);
  }
  AfterChange(changed, false);
  return Status::OK();
}

Result<PartitionRead> Partition::Read(Offset offset, int64_t max_bytes, IsolationLevel isolation,
                                      bool min_one_batch) const {
  HR_RETURN_IF_ERROR(CheckServing());
  PartitionRead r;
  r.high_watermark = high_watermark();
  r.last_stable_offset = last_stable_offset();
  r.log_start_offset = log_->start_offset();
  r.data.first_batch_base = Offset(-1);
  Offset end = log_->end_offset();
  if (offset < r.log_start_offset || offset > end) {
    return Status::OutOfRange("offset " + std::to_string(offset.value()) + " is outside [" +
                              std::to_string(r.log_start_offset.value()) + ", " +
                              std::to_string(end.value()) + "] of " + tp_.ToString());
  }
  Offset bound =
      isolation == IsolationLevel::kReadCommitted ? r.last_stable_offset : r.high_watermark;
  if (offset >= bound) return r;
  HR_ASSIGN_OR_RETURN(r.data, log_->Read(offset, max_bytes, bound, min_one_batch));
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
  if (found.value() >= bound) return OffsetAndTimestamp{};
  // The Log answers at batch granularity and does not return the record's
  // own timestamp; the requested one is a lower bound of it.
  return OffsetAndTimestamp{found.value(), TimestampMs(timestamp)};
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
  return log_->start_offset();
}

Status Partition::MaybeRoll(TimestampMs now) { return log_->MaybeRoll(now); }

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
  }
  return report;
}

void Partition::SetSettings(const TopicSettings& settings) {
  LogConfig config = settings.log;
  config.flush_on_append = false;
  log_->SetConfig(config);
  retention_delete_.store(settings.cleanup_delete);
  min_insync_replicas_.store(settings.min_insync_replicas);
}

Status Partition::Close() {
  Status closed = log_->Close();
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
