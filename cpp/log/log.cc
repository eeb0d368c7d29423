// Log: the append path, rolling, flushing, closing. Reads are in
// log_read.cc, recovery in log_recovery.cc, retention and truncation in
// log_retention.cc.
#include <algorithm>
#include <cerrno>
#include <climits>

#include "common/log_limiter.h"
#include "common/logging.h"
#include "log/compression.h"
#include "log/log_impl.h"
#include "log/record_batch_internal.h"

namespace headrace {
namespace {

// The offset index stores 4-byte positions and relative offsets.
constexpr int64_t kMaxSegmentBytes = INT32_MAX;
// Flush writes and fsyncs the checkpoint file at most this often; recovery
// from an older flush point only scans more.
constexpr int64_t kCheckpointIntervalMs = 1000;
// The append scratch buffers (records_scratch_, converted_) are released,
// right after an append's validation, when above this: a rare huge batch
// does not pin its memory for the life of the log.
constexpr size_t kKeptScratchBytes = 4u << 20;

}  // namespace

LogImpl::~LogImpl() {
  if (!closed_.load()) (void)Close();
}

Status LogImpl::Fence(Status st) {
  if (st.code() != StatusCode::kIOError) return st;
  {
    std::lock_guard<std::mutex> l(failure_mu_);
    if (!failure_.ok()) return st;  // already offline
    failure_ = st;
  }
  failed_.store(true, std::memory_order_release);
  const bool full = st.sys_errno() == ENOSPC || st.sys_errno() == EDQUOT;
  const char* kind = full ? "disk full" : "I/O error";
  // A full or failing disk takes every partition on it offline at once: one
  // line per log directory and kind, then rate-limited repeats.
  const size_t slash = dir_.find_last_of('/');
  const std::string log_dir = slash == std::string::npos ? std::string(".") : dir_.substr(0, slash);
  uint64_t left_out = 0;
  if (StorageErrorLogLimiter().Admit(log_dir + "\n" + kind, &left_out)) {
    HR_LOG_TO(kError, "headrace.storage")
            .With("event", "storage_error").With("log_dir", log_dir).With("log", dir_)
            .With("kind", full ? "disk_full" : "io_error").With("errno", st.sys_errno())
            .With("suppressed", left_out)
        << "log directory " << log_dir << ": " << kind << ": " << st.message() << "; log "
        << dir_ << " is offline (appends and flushes fail until it is reopened)"
        << StorageErrorLogLimiter().SuppressedNote(left_out);
  }
  return st;
}

Status LogImpl::failure() const {
  std::lock_guard<std::mutex> l(failure_mu_);
  return failure_;
}

Status LogImpl::OfflineError() const { return failure(); }

Status LogImpl::CheckTimestampBounds(TimestampMs min_ts, TimestampMs max_ts, int64_t now) const {
  auto bound = [this](int64_t side) {
    return side != INT64_MAX ? side : config_.timestamp_difference_max_ms;
  };
  const int64_t before = bound(config_.timestamp_before_max_ms);
  const int64_t after = bound(config_.timestamp_after_max_ms);
  const int64_t low = before >= now ? INT64_MIN : now - before;
  const int64_t high = after >= INT64_MAX - now ? INT64_MAX : now + after;
  TimestampMs bad = min_ts != kNoTimestamp && min_ts.value() < low ? min_ts
                    : max_ts.value() > high                          ? max_ts
                                                                     : kNoTimestamp;
  if (bad == kNoTimestamp) return Status::OK();
  return Status::InvalidArgument("timestamp " + std::to_string(bad.value()) +
                                 " is out of range [" + std::to_string(low) + ", " +
                                 std::to_string(high) +
                                 "] (message.timestamp.before.max.ms / after.max.ms)")
      .WithDetail(kInvalidTimestampDetail);
}

Status LogImpl::ValidateInput(std::span<const uint8_t> input, AppendInfo* info, bool leader) {
  metas_.clear();
  const bool check_times = leader && config_.timestamp_type == TimestampType::kCreateTime &&
                           (config_.timestamp_before_max_ms != INT64_MAX ||
                            config_.timestamp_after_max_ms != INT64_MAX ||
                            config_.timestamp_difference_max_ms != INT64_MAX);
  const int64_t now = check_times ? WallClockMs() : 0;
  size_t pos = 0;
  int64_t records = 0;
  while (pos < input.size()) {
    std::span<const uint8_t> rest = input.subspan(pos);
    auto at = [this] { return "batch " + std::to_string(metas_.size()) + ": "; };  // errors only
    auto h = ParseBatchHeader(rest);  // magic, lengths
    if (!h.ok()) return Status::Corruption(at() + h.status().message());
    if (h->total_size() > config_.max_message_bytes)
      return Status::TooLarge(at() + std::to_string(h->total_size()) +
                              " bytes, max.message.bytes is " +
                              std::to_string(config_.max_message_bytes));
    // A follower copies its leader's log, cleaned batches included.
    auto v = batch::ValidateBatchInfo(rest, leader ? &records_scratch_ : nullptr, !leader);
    if (!v.ok())
      return Status::Corruption(at() + v.status().message()).WithDetail(v.status().detail());
    if (leader && v->header.log_append_time() && !v->header.is_control() &&
        config_.timestamp_type == TimestampType::kLogAppendTime) {  // Kafka's rule
      return Status::InvalidArgument(at() + "the producer set the LogAppendTime timestamp type")
          .WithDetail(kInvalidTimestampDetail);
    }
    if (check_times && !v->header.is_control()) {
      // The records just validated: the batch's own, or their decompressed
      // form left in records_scratch_.
      std::span<const uint8_t> section =
          v->header.compression() == Compression::kNone
              ? rest.subspan(kBatchHeaderSize, v->header.total_size() - kBatchHeaderSize)
              : std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(records_scratch_.data()),
                                         records_scratch_.size());
      auto min_ts = batch::MinRecordTimestamp(section, v->header);
      if (!min_ts.ok()) return Status::Corruption(at() + min_ts.status().message());
      Status st = CheckTimestampBounds(*min_ts, v->max_timestamp, now);
      if (!st.ok()) return Status::InvalidArgument(at() + st.message()).WithDetail(st.detail());
    }
    if (v->header.record_count == 0) return Status::Corruption(at() + "no records");
    metas_.push_back({Offset(records + v->header.last_offset_delta), v->header.total_size(),
                      v->max_timestamp});
    if (metas_.size() == 1 || v->max_timestamp > info->max_timestamp) {
      info->max_timestamp = v->max_timestamp;
      info->offset_of_max_timestamp = Offset(records + v->max_timestamp_delta);
    }
    records += v->header.last_offset_delta + 1;
    pos += v->header.total_size();
  }
  if (records > INT32_MAX) return Status::TooLarge("too many records in one append");
  info->record_count = static_cast<int32_t>(records);
  info->batch_count = static_cast<int32_t>(metas_.size());
  info->bytes = static_cast<int64_t>(input.size());
  return Status::OK();
}

Result<bool> LogImpl::ConvertInput(std::span<const uint8_t> input, AppendInfo* info) {
  const Compression target = *config_.compression_target;
  auto needs = [target](const BatchHeader& h) { return !h.is_control() && h.compression() != target; };
  size_t pos = 0;
  bool any = false;
  for (const BatchMeta& m : metas_) {
    any = any || needs(batch::DecodeHeader(input.data() + pos));
    pos += m.size;
  }
  if (!any) return false;
  converted_.clear();
  pos = 0;
  for (size_t i = 0; i < metas_.size(); ++i) {
    std::span<const uint8_t> b = input.subspan(pos, metas_[i].size);
    pos += metas_[i].size;
    if (!needs(batch::DecodeHeader(b.data()))) {
      converted_.append(reinterpret_cast<const char*>(b.data()), b.size());
      continue;
    }
    auto c = ConvertCompression(b, target);
    if (!c.ok()) return Status::Corruption("batch " + std::to_string(i) + ": " + c.status().message());
    if (static_cast<int64_t>(c->size()) > config_.max_message_bytes)  // as Kafka re-checks
      return Status::TooLarge("batch " + std::to_string(i) + ": " + std::to_string(c->size()) +
                              " bytes once re-encoded as " + compression::CodecName(target) +
                              ", max.message.bytes is " +
                              std::to_string(config_.max_message_bytes));
    metas_[i].size = static_cast<int64_t>(c->size());
    converted_ += *c;
  }
  info->bytes = static_cast<int64_t>(converted_.size());
  return true;
}

void LogImpl::AssignOffsets(std::span<uint8_t> input, AppendInfo* info) {
  const Offset base(end_offset_.load(std::memory_order_relaxed));
  const bool append_time = config_.timestamp_type == TimestampType::kLogAppendTime;
  const TimestampMs now(WallClockMs());
  size_t pos = 0;
  Offset next = base;
  for (BatchMeta& m : metas_) {
    std::span<uint8_t> b = input.subspan(pos, m.size);
    SetBaseOffset(b, next);
    if (append_time) {
      SetLogAppendTime(b, now);
      m.max_timestamp = now;
    } else if (batch::DecodeHeader(b.data()).max_timestamp != m.max_timestamp) {
      batch::SetMaxTimestamp(b, m.max_timestamp);  // header disagreed with its records
    }
    int64_t relative_last = m.last_offset.value();  // relative to the input until now
    m.last_offset = base + relative_last;
    next = m.last_offset + 1;
    pos += m.size;
  }
  info->base_offset = base;
  info->last_offset = next - 1;
  if (append_time) {
    info->log_append_time = now;
    info->max_timestamp = now;
    info->offset_of_max_timestamp = base;
  } else {
    info->offset_of_max_timestamp = base + info->offset_of_max_timestamp.value();
  }
}

void LogImpl::CopyBaseOffsets(std::span<const uint8_t> from, std::span<uint8_t> to) const {
  size_t from_pos = 0, to_pos = 0;
  for (size_t i = 0; i < metas_.size(); ++i) {
    SetBaseOffset(to.subspan(to_pos), batch::DecodeHeader(from.data() + from_pos).base_offset);
    from_pos += metas_[i].size;
    to_pos += ParseBatchHeader(to.subspan(to_pos))->total_size();
  }
}

Status LogImpl::KeepOffsets(std::span<const uint8_t> input, AppendInfo* info) {
  Offset expected(end_offset_.load(std::memory_order_relaxed));
  size_t pos = 0;
  for (size_t i = 0; i < metas_.size(); ++i) {
    const BatchHeader h = batch::DecodeHeader(input.data() + pos);
    // Offsets only grow; a gap is a leader's cleaned segment (cleaner.h).
    if (h.base_offset < expected) {
      return Status::InvalidArgument("batch " + std::to_string(i) + " starts at offset " +
                                     std::to_string(h.base_offset.value()) + ", expected " +
                                     std::to_string(expected.value()) + " in " + dir_);
    }
    metas_[i].last_offset = h.last_offset();
    expected = h.last_offset() + 1;
    pos += static_cast<size_t>(metas_[i].size);
  }
  info->base_offset = Offset(end_offset_.load(std::memory_order_relaxed));
  info->last_offset = expected - 1;
  info->offset_of_max_timestamp = info->base_offset + info->offset_of_max_timestamp.value();
  return Status::OK();
}

Result<AppendInfo> LogImpl::Append(std::span<uint8_t> batches) {
  std::unique_lock<std::mutex> lock(append_mu_);
  return AppendLocked(batches, /*assign_offsets=*/true, WriteCache::kKeep, lock);
}

Result<AppendInfo> LogImpl::AppendWithOffsets(std::span<uint8_t> batches, WriteCache cache) {
  std::unique_lock<std::mutex> lock(append_mu_);
  return AppendLocked(batches, /*assign_offsets=*/false, cache, lock);
}

Result<AppendInfo> LogImpl::AppendLocked(std::span<uint8_t> batches, bool assign_offsets,
                                         WriteCache cache, std::unique_lock<std::mutex>& lock) {
  if (batches.empty()) return Status::InvalidArgument("empty append");
  if (closed_.load()) return Status::Closed(dir_);
  if (failed()) return OfflineError();
  AppendInfo info;
  Status valid = ValidateInput(batches, &info, /*leader=*/assign_offsets);
  if (records_scratch_.capacity() > kKeptScratchBytes) std::string().swap(records_scratch_);
  if (converted_.capacity() > kKeptScratchBytes) std::string().swap(converted_);
  HR_RETURN_IF_ERROR(valid);
  if (!assign_offsets) HR_RETURN_IF_ERROR(KeepOffsets(batches, &info));
  const std::span<uint8_t> input = batches;
  if (assign_offsets && config_.compression_target) {
    HR_ASSIGN_OR_RETURN(bool converted, ConvertInput(batches, &info));
    if (converted) batches = {reinterpret_cast<uint8_t*>(converted_.data()), converted_.size()};
  }
  const int64_t now = WallClockMs();
  HR_RETURN_IF_ERROR(Fence(MaybeRollForAppend(info.bytes, info.record_count, now)));
  if (assign_offsets) AssignOffsets(batches, &info);
  if (batches.data() != input.data()) CopyBaseOffsets(batches, input);
  Segment& active = *segments_.back();
  HR_RETURN_IF_ERROR(
      Fence(active.Append(batches, metas_, config_.index_interval_bytes, now, cache)));
  end_offset_.store(info.last_offset.value() + 1, std::memory_order_release);
  unflushed_messages_ += info.record_count;
  info.flush_due = FlushDueLocked(now);
  const bool flush_here = info.flush_due && config_.flush_on_append;
  lock.unlock();
  if (flush_here) HR_RETURN_IF_ERROR(Flush());
  return info;
}

Status LogImpl::MaybeRollForAppend(int64_t bytes, int64_t records, int64_t now_ms) {
  Segment& active = *segments_.back();
  int64_t size = active.size();
  if (size == 0) {
    if (bytes > kMaxSegmentBytes) return Status::TooLarge("append above 2 GiB");
    return Status::OK();
  }
  int64_t max_bytes = std::min<int64_t>(config_.segment_bytes, kMaxSegmentBytes);
  int64_t last_relative = end_offset_.load(std::memory_order_relaxed) + records - 1 -
                          active.base_offset().value();
  bool roll = size + bytes > max_bytes || last_relative > INT32_MAX || active.indexes_full() ||
              (active.rolling_base_ms() >= 0 && now_ms - active.rolling_base_ms() >= config_.segment_ms);
  return roll ? RollLocked() : Status::OK();
}

Status LogImpl::RollLocked() {
  std::shared_ptr<Segment> old = segments_.back();
  if (old->size() == 0) return Status::OK();
  HR_ASSIGN_OR_RETURN(std::shared_ptr<Segment> seg,
                      Segment::Create(env_, dir_, Offset(end_offset_.load()), config_));
  HR_RETURN_IF_ERROR(old->Seal());
  dir_dirty_ = true;
  std::unique_lock<std::shared_mutex> w(segments_mu_);
  segments_.push_back(std::move(seg));
  return Status::OK();
}

Status LogImpl::MaybeRoll(TimestampMs now) {
  std::lock_guard<std::mutex> lock(append_mu_);
  if (closed_.load()) return Status::Closed(dir_);
  if (failed()) return OfflineError();
  const Segment& active = *segments_.back();
  if (active.size() > 0 && active.rolling_base_ms() >= 0 &&
      now.value() - active.rolling_base_ms() >= config_.segment_ms)
    return Fence(RollLocked());
  return Status::OK();
}

bool LogImpl::FlushDueLocked(int64_t now_ms) const {
  if (unflushed_messages_ == 0) return false;
  if (config_.flush_interval_messages >= 0 && unflushed_messages_ >= config_.flush_interval_messages)
    return true;
  return config_.flush_interval_ms >= 0 && now_ms - last_flush_ms_ >= config_.flush_interval_ms;
}

bool LogImpl::FlushDue() const {
  std::lock_guard<std::mutex> lock(append_mu_);
  return !closed_.load() && FlushDueLocked(WallClockMs());
}

Status LogImpl::MaybeFlush() {
  {
    std::lock_guard<std::mutex> lock(append_mu_);
    if (closed_.load()) return Status::Closed(dir_);
    if (failed()) return OfflineError();
    if (!FlushDueLocked(WallClockMs())) return Status::OK();
  }
  return Flush();
}

Status LogImpl::WriteCheckpointLocked(bool sync) {
  checkpoint_.log_start_offset = Offset(start_offset_.load());
  if (sync) last_checkpoint_sync_ms_ = WallClockMs();
  checkpoint_file_segment_ = checkpoint_.recovery_segment;
  return WriteCheckpoint(*env_, dir_, checkpoint_, sync);
}

void LogImpl::SetFlushPointLocked(Offset offset, Offset segment, int64_t position) {
  flushed_offset_.store(offset.value(), std::memory_order_release);
  flush_segment_ = segment;
  flush_position_ = position;
  checkpoint_.recovery_offset = offset;
  checkpoint_.recovery_segment = segment;
  checkpoint_.recovery_position = position;
}

Status LogImpl::Flush() {
  std::lock_guard<std::mutex> flush_lock(flush_mu_);
  std::vector<std::shared_ptr<Segment>> to_sync;
  Offset target, segment;
  int64_t position;
  uint64_t generation;
  bool new_files;
  {
    std::lock_guard<std::mutex> lock(append_mu_);
    if (closed_.load()) return Status::Closed(dir_);
    if (failed()) return OfflineError();
    target = end_offset();
    if (target == flushed_offset() && unflushed_messages_ == 0) return Status::OK();
    for (const auto& s : segments_)  // the flush segment and every later one
      if (s->base_offset() >= flush_segment_ || s == segments_.back()) to_sync.push_back(s);
    segment = segments_.back()->base_offset();
    position = segments_.back()->size();
    generation = truncations_;
    new_files = dir_dirty_;
    dir_dirty_ = false;
    unflushed_messages_ = 0;
    last_flush_ms_ = WallClockMs();
  }
  // The records are what a flush makes durable: the .log files only. The
  // indexes are synced when the recovery checkpoint is written below (once
  // per kCheckpointIntervalMs, and whenever the flush point entered another
  // segment): a segment before the checkpoint's recovery segment is loaded
  // with its indexes trusted, so they must be durable by then; the ones at
  // or after it are rescanned and their indexes rebuilt after a crash. Two
  // msyncs per segment and flush saved (docs/performance.md).
  bool checkpoint_due;
  {
    std::lock_guard<std::mutex> cp(checkpoint_mu_);
    checkpoint_due = WallClockMs() - last_checkpoint_sync_ms_ >= kCheckpointIntervalMs ||
                     segment != checkpoint_file_segment_;
  }
  for (const auto& s : to_sync) {
    HR_RETURN_IF_ERROR(Fence(checkpoint_due ? s->Sync() : s->SyncData()));
  }
  // A segment created since the last flush: its directory entry must be
  // durable before the flushed offset covers its data.
  if (new_files) HR_RETURN_IF_ERROR(Fence(env_->SyncDir(dir_)));
  std::unique_lock<std::mutex> lock(append_mu_);
  if (generation != truncations_) return Status::OK();  // a Truncate moved the flush point
  if (failed()) return OfflineError();  // an append failed meanwhile: publish nothing
  std::lock_guard<std::mutex> cp(checkpoint_mu_);
  if (target > flushed_offset()) SetFlushPointLocked(target, segment, position);
  lock.unlock();
  // The new flush point only saves recovery work, so the file is written
  // (and fsynced) once per kCheckpointIntervalMs, or when the flush point
  // entered another segment (recovery then scans at most the active
  // segment's last second of data): the flush point is kept in memory
  // meanwhile, and recovery from the older one on disk only scans more.
  // Close writes the final one. (It was rewritten, unsynced, on every
  // flush: an open/write/close/rename per fsync; docs/performance.md.)
  // (Decided before the syncs above, so a checkpoint is only written after
  // the indexes it vouches for were synced.)
  if (!checkpoint_due && checkpoint_.recovery_segment == checkpoint_file_segment_) {
    return Status::OK();
  }
  if (!checkpoint_due) {  // the flush point moved segments after all: sync, then write
    for (const auto& s : to_sync) HR_RETURN_IF_ERROR(Fence(s->Sync()));
  }
  return Fence(WriteCheckpointLocked(/*sync=*/true));
}

void LogImpl::SetConfig(const LogConfig& config) {
  std::lock_guard<std::mutex> lock(append_mu_);
  config_ = config;
}

Status LogImpl::SealForCloseLocked() {
  std::shared_ptr<Segment> active = segments_.back();
  HR_RETURN_IF_ERROR(active->Seal());
  for (const auto& s : segments_)  // appends that raced with the Flush, and the seal
    if (s->base_offset() >= flush_segment_ || s == active) HR_RETURN_IF_ERROR(s->Sync());
  std::lock_guard<std::mutex> cp(checkpoint_mu_);
  SetFlushPointLocked(end_offset(), active->base_offset(), active->size());
  checkpoint_.clean_shutdown = true;
  return WriteCheckpointLocked(/*sync=*/true);
}

Status LogImpl::Close() {
  Status flushed = Flush();
  if (flushed.code() == StatusCode::kClosed) return flushed;
  std::lock_guard<std::mutex> flush_lock(flush_mu_);  // no Flush may fail under the seal
  std::lock_guard<std::mutex> lock(append_mu_);
  if (closed_.load()) return Status::Closed(dir_);
  closed_.store(true);
  // An offline log is left as the fault left it: no seal, no clean mark.
  Status st = !flushed.ok() ? flushed : failed() ? OfflineError() : Fence(SealForCloseLocked());
  std::unique_lock<std::shared_mutex> w(segments_mu_);
  segments_.clear();
  return st;
}

Status LogImpl::Abandon() {
  std::lock_guard<std::mutex> flush_lock(flush_mu_);  // waits for a running Flush
  std::lock_guard<std::mutex> lock(append_mu_);
  if (closed_.load()) return Status::Closed(dir_);
  closed_.store(true);
  std::unique_lock<std::shared_mutex> w(segments_mu_);
  segments_.clear();
  return Status::OK();
}

int64_t LogImpl::size_bytes() const {
  std::shared_lock<std::shared_mutex> r(segments_mu_);
  int64_t total = 0;
  for (const auto& s : segments_) total += s->size();
  return total;
}

int LogImpl::segment_count() const {
  std::shared_lock<std::shared_mutex> r(segments_mu_);
  return static_cast<int>(segments_.size());
}

std::vector<Offset> LogImpl::segment_base_offsets() const {
  std::shared_lock<std::shared_mutex> r(segments_mu_);
  std::vector<Offset> bases;
  bases.reserve(segments_.size());
  for (const auto& s : segments_) bases.push_back(s->base_offset());
  return bases;
}

Offset LogImpl::active_segment_base() const {
  std::shared_lock<std::shared_mutex> r(segments_mu_);
  return segments_.back()->base_offset();
}

}  // namespace headrace
