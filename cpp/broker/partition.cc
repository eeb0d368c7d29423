#include "broker/partition.h"

#include <optional>
#include <vector>

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

}  // namespace

LogFactory DefaultLogFactory() {
  return [](const std::string& dir, const LogConfig& config) { return Log::Open(dir, config); };
}

Result<std::shared_ptr<Partition>> Partition::Open(const std::string& data_dir,
                                                   const TopicPartition& tp, const Uuid& topic_id,
                                                   const TopicSettings& settings,
                                                   PartitionListener* listener,
                                                   const LogFactory& factory) {
  HR_ASSIGN_OR_RETURN(std::unique_ptr<Log> log,
                      factory(PartitionDirPath(data_dir, tp), settings.log));
  return std::make_shared<Partition>(tp, topic_id, std::move(log), settings, listener);
}

Partition::Partition(TopicPartition tp, Uuid topic_id, std::unique_ptr<Log> log,
                     const TopicSettings& settings, PartitionListener* listener)
    : tp_(std::move(tp)), topic_id_(topic_id), log_(std::move(log)), listener_(listener) {
  high_watermark_.store(log_->end_offset().value());
  retention_delete_.store(settings.cleanup_delete);
}

Partition::~Partition() = default;

bool Partition::AdvanceHighWatermarkLocked(Offset offset) {
  Offset bounded = std::min(offset, log_->end_offset());
  if (bounded.value() <= high_watermark_.load(std::memory_order_relaxed)) return false;
  high_watermark_.store(bounded.value(), std::memory_order_release);
  return true;
}

Result<AppendInfo> Partition::Append(std::span<uint8_t> batches) {
  std::unique_lock<std::mutex> lock(append_mu_);
  StampLeaderEpoch(batches, leader_epoch());
  std::vector<BatchHeader> producer_batches = ProducerBatchHeaders(batches);
  if (!producer_batches.empty()) {
    Result<std::optional<AppendInfo>> dup = CheckProducerStateLocked(producer_batches);
    if (!dup.ok()) return dup.status();
    if (dup->has_value()) return **dup;  // already appended: answer the original offsets
  }
  Result<AppendInfo> info = log_->Append(batches);
  if (info.ok() && !producer_batches.empty()) {
    // The log assigned the base offsets in place; record them.
    for (const BatchHeader& h : ProducerBatchHeaders(batches)) producer_state_.Update(h);
  }
  // Single node: the ISR is this broker, so appended == committed.
  bool advanced = info.ok() && AdvanceHighWatermarkLocked(log_->end_offset());
  lock.unlock();
  if (advanced && listener_) listener_->OnHighWatermarkAdvanced(*this);
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

void Partition::AdvanceHighWatermark(Offset offset) {
  bool advanced;
  {
    std::lock_guard<std::mutex> lock(append_mu_);
    advanced = AdvanceHighWatermarkLocked(offset);
  }
  if (advanced && listener_) listener_->OnHighWatermarkAdvanced(*this);
}

Result<PartitionRead> Partition::Read(Offset offset, int64_t max_bytes, IsolationLevel isolation,
                                      bool min_one_batch) const {
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
  std::lock_guard<std::mutex> lock(append_mu_);
  Offset hw = high_watermark();
  if (offset.value() == -1) offset = hw;
  if (offset > hw || offset.value() < 0) {
    return Status::OutOfRange("DeleteRecords offset " + std::to_string(offset.value()) +
                              " is outside [0, high watermark " + std::to_string(hw.value()) +
                              "] of " + tp_.ToString());
  }
  if (offset > log_->start_offset()) HR_RETURN_IF_ERROR(log_->DeleteRecordsBefore(offset));
  return log_->start_offset();
}

Status Partition::Flush() { return log_->Flush(); }
Status Partition::MaybeFlush() { return log_->MaybeFlush(); }
Status Partition::MaybeRoll(TimestampMs now) { return log_->MaybeRoll(now); }

Result<RetentionReport> Partition::ApplyRetention(TimestampMs now) {
  if (!retention_delete_.load()) {
    RetentionReport none;
    none.new_start_offset = log_->start_offset();
    return none;
  }
  return log_->ApplyRetention(now);
}

void Partition::SetSettings(const TopicSettings& settings) {
  log_->SetConfig(settings.log);
  retention_delete_.store(settings.cleanup_delete);
}

Status Partition::Close() { return log_->Close(); }

Status Partition::Abandon() { return log_->Abandon(); }

}  // namespace headrace::broker
