// Removing data: retention (time, size), DeleteRecordsBefore, Truncate.
#include <algorithm>

#include "log/log_impl.h"
#include "log/record_batch_internal.h"

namespace headrace {
namespace {

// The time retention judges a segment by: its newest record timestamp, or
// the file's modification time when no record carries one (as Kafka does).
int64_t RetentionTimestamp(const Segment& seg) {
  TimestampMs ts = seg.max_timestamp().first;
  if (ts >= TimestampMs(0)) return ts.value();
  Result<int64_t> mtime = seg.ModifiedMs();
  return mtime.ok() ? *mtime : INT64_MAX;  // unknown: keep it
}

}  // namespace

Status LogImpl::DeleteOldestSegments(size_t count, RetentionReport* report) {
  count = std::min(count, segments_.size() - 1);  // never the active segment
  if (count == 0) return Status::OK();
  std::vector<std::shared_ptr<Segment>> doomed(segments_.begin(), segments_.begin() + count);
  Offset new_start = segments_[count]->base_offset();
  if (new_start > start_offset()) start_offset_.store(new_start.value(), std::memory_order_release);
  {
    std::unique_lock<std::shared_mutex> w(segments_mu_);
    segments_.erase(segments_.begin(), segments_.begin() + count);
  }
  for (const auto& s : doomed) {
    if (report) {
      report->segments_deleted++;
      report->bytes_deleted += s->size();
      report->deleted_base_offsets.push_back(s->base_offset().value());
    }
    HR_RETURN_IF_ERROR(s->DeleteFiles());  // open slices keep the fd and data alive
  }
  return Status::OK();
}

Status LogImpl::DeleteNewestSegments(size_t keep_last) {
  std::vector<std::shared_ptr<Segment>> doomed;
  {
    std::unique_lock<std::shared_mutex> w(segments_mu_);
    doomed.assign(segments_.begin() + keep_last + 1, segments_.end());
    segments_.resize(keep_last + 1);
  }
  for (const auto& s : doomed) HR_RETURN_IF_ERROR(s->DeleteFiles());
  return Status::OK();
}

Result<RetentionReport> LogImpl::ApplyRetention(TimestampMs now) {
  std::lock_guard<std::mutex> lock(append_mu_);
  if (closed_.load()) return Status::Closed(dir_);
  if (failed()) return OfflineError();
  const size_t candidates = segments_.size() - 1;
  size_t count = 0;
  if (config_.retention_ms >= 0) {
    while (count < candidates &&
           RetentionTimestamp(*segments_[count]) < now.value() - config_.retention_ms)
      ++count;
  }
  const size_t by_time = count;
  if (config_.retention_bytes >= 0) {
    int64_t total = 0;
    for (size_t i = count; i < segments_.size(); ++i) total += segments_[i]->size();
    while (count < candidates && total - segments_[count]->size() >= config_.retention_bytes) {
      total -= segments_[count]->size();
      ++count;
    }
  }
  RetentionReport report;
  report.segments_by_time = static_cast<int>(by_time);
  HR_RETURN_IF_ERROR(Fence(DeleteOldestSegments(count, &report)));
  report.new_start_offset = start_offset();
  if (count > 0) {
    std::lock_guard<std::mutex> cp(checkpoint_mu_);
    HR_RETURN_IF_ERROR(Fence(WriteCheckpointLocked(/*sync=*/true)));
  }
  return report;
}

Status LogImpl::DeleteRecordsBefore(Offset offset) {
  std::lock_guard<std::mutex> lock(append_mu_);
  if (closed_.load()) return Status::Closed(dir_);
  if (failed()) return OfflineError();
  if (offset > end_offset())
    return Status::OutOfRange("offset " + std::to_string(offset.value()) + " above the log end " +
                              std::to_string(end_offset().value()));
  if (offset <= start_offset()) return Status::OK();
  start_offset_.store(offset.value(), std::memory_order_release);
  size_t count = 0;  // segments whose successor starts at or below the new start
  while (count + 1 < segments_.size() && segments_[count + 1]->base_offset() <= offset) ++count;
  HR_RETURN_IF_ERROR(Fence(DeleteOldestSegments(count, nullptr)));
  std::lock_guard<std::mutex> cp(checkpoint_mu_);
  return Fence(WriteCheckpointLocked(/*sync=*/true));
}

Status LogImpl::Truncate(Offset offset) {
  std::lock_guard<std::mutex> lock(append_mu_);
  if (closed_.load()) return Status::Closed(dir_);
  if (failed()) return OfflineError();
  if (offset < start_offset() || offset > end_offset())
    return Status::OutOfRange("truncate to " + std::to_string(offset.value()) + " outside [" +
                              std::to_string(start_offset().value()) + ", " +
                              std::to_string(end_offset().value()) + "]");
  if (offset == end_offset()) return Status::OK();
  return Fence(TruncateLocked(offset));
}

Status LogImpl::TruncateLocked(Offset offset) {
  size_t keep = segments_.size() - 1;  // the last segment with base <= offset
  while (keep > 0 && segments_[keep]->base_offset() > offset) --keep;
  const bool reactivate = keep + 1 < segments_.size();
  HR_RETURN_IF_ERROR(DeleteNewestSegments(keep));
  Segment& seg = *segments_[keep];
  const int64_t limit = seg.size();
  FileReader reader = seg.Reader(limit, kBatchHeaderSize);
  HR_ASSIGN_OR_RETURN(int64_t pos, seg.FindPosition(offset, limit, &reader));
  Offset new_end = offset;
  if (pos < limit) {  // cut before the batch holding `offset` (whole batches only)
    HR_ASSIGN_OR_RETURN(const uint8_t* p, reader.Peek(pos, kBatchHeaderSize));
    new_end = batch::DecodeHeader(p).base_offset;
  }
  ++truncations_;
  end_offset_.store(new_end.value(), std::memory_order_release);
  HR_RETURN_IF_ERROR(seg.TruncateTo(pos, new_end));
  if (reactivate) HR_RETURN_IF_ERROR(seg.Activate(config_.preallocate_indexes));
  HR_RETURN_IF_ERROR(seg.Sync());
  if (new_end < start_offset()) start_offset_.store(new_end.value(), std::memory_order_release);
  std::lock_guard<std::mutex> cp(checkpoint_mu_);
  if (flushed_offset() > new_end) SetFlushPointLocked(new_end, seg.base_offset(), pos);
  checkpoint_.clean_shutdown = false;
  return WriteCheckpointLocked(/*sync=*/true);
}

Status LogImpl::TruncateFullyAndStartAt(Offset offset) {
  std::lock_guard<std::mutex> lock(append_mu_);
  if (closed_.load()) return Status::Closed(dir_);
  if (failed()) return OfflineError();
  if (offset.value() < 0) {
    return Status::InvalidArgument("cannot start a log at offset " + std::to_string(offset.value()));
  }
  return Fence(TruncateFullyLocked(offset));
}

Status LogImpl::TruncateFullyLocked(Offset offset) {
  ++truncations_;  // a Flush that snapshotted the old segments publishes nothing
  // The old files go first (readers holding slices keep their fds), so the
  // new segment's name is free even when `offset` is an old base.
  for (const auto& s : segments_) HR_RETURN_IF_ERROR(s->DeleteFiles());
  HR_ASSIGN_OR_RETURN(std::shared_ptr<Segment> seg, Segment::Create(env_, dir_, offset, config_));
  {
    std::unique_lock<std::shared_mutex> w(segments_mu_);
    segments_.assign(1, std::move(seg));
  }
  // Readers never see start > end: the bound that moves away moves first.
  if (offset.value() >= end_offset_.load()) {
    end_offset_.store(offset.value(), std::memory_order_release);
    start_offset_.store(offset.value(), std::memory_order_release);
  } else {
    start_offset_.store(offset.value(), std::memory_order_release);
    end_offset_.store(offset.value(), std::memory_order_release);
  }
  unflushed_messages_ = 0;
  dir_dirty_ = false;
  HR_RETURN_IF_ERROR(env_->SyncDir(dir_));  // the deletions and the new segment
  std::lock_guard<std::mutex> cp(checkpoint_mu_);
  SetFlushPointLocked(offset, offset, 0);
  checkpoint_.clean_shutdown = false;
  return WriteCheckpointLocked(/*sync=*/true);
}

}  // namespace headrace
