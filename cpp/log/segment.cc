#include "log/segment.h"

#include <fcntl.h>

#include <algorithm>

#include "log/filename.h"
#include "log/record_batch_internal.h"

namespace headrace {
namespace {

using filename::FileKind;

constexpr int64_t kScanReadahead = 1 << 20;
constexpr int64_t kHeaderReadahead = 16 << 10;

// Checks a header read during a scan. Returns "" or why it is bad.
std::string CheckScannedHeader(const BatchHeader& h, int64_t pos, int64_t file_size,
                               Offset expected) {
  std::string at = "batch at position " + std::to_string(pos);
  if (h.batch_length < batch::kMinBatchLength)
    return at + ": length " + std::to_string(h.batch_length) + " below the header size";
  if (h.total_size() > file_size - pos)
    return at + ": length " + std::to_string(h.batch_length) + " runs past the end of the file";
  if (h.magic != kMagicV2) return at + ": magic " + std::to_string(h.magic);
  // Offsets only grow: a cleaned segment (cleaner.h) has gaps between
  // batches, and a cleaned batch fewer records than offsets.
  if (h.base_offset < expected)
    return at + ": base offset " + std::to_string(h.base_offset.value()) + ", expected at least " +
           std::to_string(expected.value());
  if (h.record_count < 0 || h.last_offset_delta < 0 ||
      (h.record_count > 0 && h.record_count > int64_t{h.last_offset_delta} + 1))
    return at + ": record count " + std::to_string(h.record_count) +
           " does not match last offset delta";
  return "";
}

}  // namespace

Result<std::shared_ptr<Segment>> Segment::Create(FileEnv* env, const std::string& dir,
                                                 Offset base, const LogConfig& config) {
  std::shared_ptr<Segment> s(new Segment(env, dir, base));
  HR_RETURN_IF_ERROR(s->OpenFiles(config, /*create=*/true));
  HR_RETURN_IF_ERROR(s->Activate(config.preallocate_indexes));
  return s;
}

Result<std::shared_ptr<Segment>> Segment::Open(FileEnv* env, const std::string& dir,
                                               Offset base, const LogConfig& config) {
  std::shared_ptr<Segment> s(new Segment(env, dir, base));
  HR_RETURN_IF_ERROR(s->OpenFiles(config, /*create=*/false));
  HR_ASSIGN_OR_RETURN(int64_t size, s->FileSize());
  s->size_.store(size, std::memory_order_release);
  return s;
}

Status Segment::OpenFiles(const LogConfig& config, bool create) {
  log_path_ = filename::SegmentPath(dir_, base_, FileKind::kLog);
  HR_ASSIGN_OR_RETURN(fd_, env_->Open(log_path_, O_RDWR | (create ? O_CREAT | O_EXCL : 0)));
  std::string oi = filename::SegmentPath(dir_, base_, FileKind::kOffsetIndex);
  std::string ti = filename::SegmentPath(dir_, base_, FileKind::kTimeIndex);
  if (!create) {
    for (const std::string& p : {oi, ti}) {
      Result<FileStat> st = env_->StatPath(p);
      if (!st.ok() && st.status().code() != StatusCode::kNotFound) return st.status();
      indexes_were_missing_ = indexes_were_missing_ || !st.ok();
    }
  }
  HR_ASSIGN_OR_RETURN(offset_index_, OffsetIndex::Open(env_, oi, base_, config.max_index_bytes));
  HR_ASSIGN_OR_RETURN(time_index_, TimeIndex::Open(env_, ti, base_, config.max_index_bytes));
  max_ts_offset_ = base_;
  return Status::OK();
}

Segment::~Segment() {
  if (fd_ >= 0) env_->Close(fd_);
}

Result<int64_t> Segment::FileSize() const {
  HR_ASSIGN_OR_RETURN(FileStat st, env_->Stat(fd_, log_path_));
  return st.size;
}

Result<int64_t> Segment::ModifiedMs() const {
  HR_ASSIGN_OR_RETURN(FileStat st, env_->Stat(fd_, log_path_));
  return st.mtime_ms;
}

std::pair<TimestampMs, Offset> Segment::max_timestamp() const {
  std::lock_guard<std::mutex> l(ts_mu_);
  return {max_ts_, max_ts_offset_};
}

void Segment::SetMaxTimestamp(TimestampMs ts, Offset offset) {
  std::lock_guard<std::mutex> l(ts_mu_);
  max_ts_ = ts;
  max_ts_offset_ = offset;
}

Result<int64_t> Segment::FindPosition(Offset target, int64_t limit, FileReader* reader) const {
  int64_t pos = offset_index_->Lookup(target, FilePosition(limit)).position.value();
  while (pos < limit) {
    HR_ASSIGN_OR_RETURN(const uint8_t* p, reader->Peek(pos, kBatchHeaderSize));
    BatchHeader h = batch::DecodeHeader(p);
    if (h.batch_length < batch::kMinBatchLength)
      return Status::Corruption(log_path_ + ": bad batch length at " + std::to_string(pos));
    if (h.last_offset() >= target) return pos;
    pos += h.total_size();
  }
  return limit;
}

Result<int64_t> Segment::LastBoundaryWithin(int64_t from, int64_t at_most, int64_t limit,
                                            FileReader* reader) const {
  at_most = std::min(at_most, limit);
  int64_t pos = std::max(from, offset_index_->LookupPosition(FilePosition(at_most)).position.value());
  while (pos < at_most) {
    HR_ASSIGN_OR_RETURN(const uint8_t* p, reader->Peek(pos, kBatchHeaderSize));
    BatchHeader h = batch::DecodeHeader(p);
    if (h.batch_length < batch::kMinBatchLength)
      return Status::Corruption(log_path_ + ": bad batch length at " + std::to_string(pos));
    if (pos + h.total_size() > at_most) break;
    pos += h.total_size();
  }
  return pos;
}

Status Segment::IndexBatch(const BatchMeta& m, int64_t position, int32_t index_interval) {
  // Invariant: only the appender changes max_ts_, so reading it unlocked here is safe.
  if (m.max_timestamp > max_ts_) SetMaxTimestamp(m.max_timestamp, m.last_offset);
  if (bytes_since_index_ > index_interval) {
    // A full index only makes lookups scan further; the log rolls before that.
    if (!offset_index_->full())
      HR_RETURN_IF_ERROR(offset_index_->Append(m.last_offset, FilePosition(position)));
    if (!time_index_->full()) HR_RETURN_IF_ERROR(time_index_->MaybeAppend(max_ts_, max_ts_offset_));
    bytes_since_index_ = 0;
  }
  bytes_since_index_ += m.size;
  return Status::OK();
}

Status Segment::Append(std::span<const uint8_t> bytes, std::span<const BatchMeta> metas,
                       int32_t index_interval, int64_t now_ms, WriteCache cache) {
  const int64_t start = size_.load(std::memory_order_relaxed);
  const int64_t n = static_cast<int64_t>(bytes.size());
  Status st = env_->WriteAt(fd_, log_path_, bytes.data(), n, start, cache);
  int64_t pos = start;
  for (size_t i = 0; st.ok() && i < metas.size(); ++i) {
    st = IndexBatch(metas[i], pos, index_interval);
    pos += metas[i].size;
  }
  if (!st.ok()) {
    // Best effort: leave no partial batch behind (recovery cuts one anyway),
    // and forget the index entries and max timestamp of what failed.
    (void)env_->Truncate(fd_, log_path_, start);
    (void)ForgetFrom(start, batch::DecodeHeader(bytes.data()).base_offset);
    return st;
  }
  if (rolling_base_ms_ < 0) rolling_base_ms_ = now_ms;
  size_.store(start + n, std::memory_order_release);
  return Status::OK();
}

Result<ScanOutcome> Segment::ScanAndRebuild(int64_t verify_from, int32_t index_interval) {
  HR_ASSIGN_OR_RETURN(int64_t file_size, FileSize());
  offset_index_->Clear();
  time_index_->Clear();
  bytes_since_index_ = 0;
  SetMaxTimestamp(kNoTimestamp, base_);
  FileReader reader = Reader(file_size, kScanReadahead);
  ScanOutcome out{0, base_, ""};
  while (out.valid_size < file_size) {
    int64_t pos = out.valid_size;
    if (file_size - pos < kBatchHeaderSize) {
      out.error = "torn batch header at position " + std::to_string(pos) + " (" +
                  std::to_string(file_size - pos) + " bytes left)";
      break;
    }
    HR_ASSIGN_OR_RETURN(const uint8_t* p, reader.Peek(pos, kBatchHeaderSize));
    BatchHeader h = batch::DecodeHeader(p);
    out.error = CheckScannedHeader(h, pos, file_size, out.next_offset);
    if (!out.error.empty()) break;
    if (pos >= verify_from) {
      HR_ASSIGN_OR_RETURN(p, reader.Peek(pos, h.total_size()));
      auto v = batch::ValidateBatchInfo({p, static_cast<size_t>(h.total_size())}, nullptr,
                                        /*allow_gaps=*/true);
      if (!v.ok()) {
        out.error = "batch at position " + std::to_string(pos) + ": " + v.status().message();
        break;
      }
    }
    if (pos == 0) rolling_base_ms_ = h.max_timestamp.value();
    HR_RETURN_IF_ERROR(IndexBatch({h.last_offset(), h.total_size(), h.max_timestamp}, pos,
                                  index_interval));
    out.valid_size = pos + h.total_size();
    out.next_offset = h.last_offset() + 1;
  }
  size_.store(out.valid_size, std::memory_order_release);
  return out;
}

Result<Offset> Segment::LoadTrusted(int64_t offset_limit, int32_t index_interval) {
  HR_ASSIGN_OR_RETURN(int64_t file_size, FileSize());
  HR_RETURN_IF_ERROR(offset_index_->SanityCheck(file_size, offset_limit));
  HR_RETURN_IF_ERROR(time_index_->SanityCheck(offset_limit));
  std::optional<TimeIndex::Entry> t = time_index_->Last();
  SetMaxTimestamp(t ? t->timestamp : kNoTimestamp, t ? t->offset : base_);
  int64_t n = offset_index_->entries();
  OffsetIndex::Entry last = n > 0 ? offset_index_->EntryAt(n - 1) : OffsetIndex::Entry{base_, FilePosition(0)};
  FileReader reader = Reader(file_size, kHeaderReadahead);
  int64_t pos = last.position.value();
  Offset expected = base_;
  bool first = true;
  while (pos < file_size) {
    if (file_size - pos < kBatchHeaderSize)
      return Status::Corruption(log_path_ + ": torn batch header at " + std::to_string(pos));
    HR_ASSIGN_OR_RETURN(const uint8_t* p, reader.Peek(pos, kBatchHeaderSize));
    BatchHeader h = batch::DecodeHeader(p);
    if (first && n > 0) {
      if (h.last_offset() != last.offset)
        return Status::Corruption(log_path_ + ": last index entry does not match its batch");
      expected = h.base_offset;
    }
    std::string err = CheckScannedHeader(h, pos, file_size, expected);
    if (!err.empty()) return Status::Corruption(log_path_ + ": " + err);
    if (pos == 0) rolling_base_ms_ = h.max_timestamp.value();
    if (h.max_timestamp > max_ts_) SetMaxTimestamp(h.max_timestamp, h.last_offset());
    expected = h.last_offset() + 1;
    pos += h.total_size();
    first = false;
  }
  if (n > 0 && first) return Status::Corruption(log_path_ + ": index points past the log");
  if (expected - base_ > offset_limit)
    return Status::Corruption(log_path_ + ": offsets run into the next segment");
  if (file_size > 0 && rolling_base_ms_ < 0) {
    HR_ASSIGN_OR_RETURN(const uint8_t* p, reader.Peek(0, kBatchHeaderSize));
    rolling_base_ms_ = batch::DecodeHeader(p).max_timestamp.value();
  }
  bytes_since_index_ = file_size - last.position.value();
  size_.store(file_size, std::memory_order_release);
  (void)index_interval;
  return expected;
}

Status Segment::RecomputeMaxTimestamp() {
  std::optional<TimeIndex::Entry> t = time_index_->Last();
  SetMaxTimestamp(t ? t->timestamp : kNoTimestamp, t ? t->offset : base_);
  int64_t limit = size();
  int64_t pos = t ? offset_index_->Lookup(t->offset).position.value() : 0;
  FileReader reader = Reader(limit, kHeaderReadahead);
  while (pos < limit) {
    HR_ASSIGN_OR_RETURN(const uint8_t* p, reader.Peek(pos, kBatchHeaderSize));
    BatchHeader h = batch::DecodeHeader(p);
    if (h.max_timestamp > max_ts_) SetMaxTimestamp(h.max_timestamp, h.last_offset());
    if (h.batch_length < batch::kMinBatchLength) return Status::Corruption(log_path_);
    pos += h.total_size();
  }
  return Status::OK();
}

Status Segment::TruncateTo(int64_t new_size, Offset next_offset) {
  HR_RETURN_IF_ERROR(env_->Truncate(fd_, log_path_, new_size));
  return ForgetFrom(new_size, next_offset);
}

Status Segment::ForgetFrom(int64_t new_size, Offset next_offset) {
  size_.store(new_size, std::memory_order_release);
  offset_index_->TruncateToPosition(FilePosition(new_size));
  time_index_->TruncateToOffset(next_offset);
  int64_t n = offset_index_->entries();
  bytes_since_index_ = new_size - (n > 0 ? offset_index_->EntryAt(n - 1).position.value() : 0);
  if (new_size == 0) rolling_base_ms_ = -1;
  return RecomputeMaxTimestamp();
}

Status Segment::Seal() {
  auto [ts, off] = max_timestamp();
  if (!time_index_->full()) HR_RETURN_IF_ERROR(time_index_->MaybeAppend(ts, off));
  HR_RETURN_IF_ERROR(offset_index_->file().Trim());
  return time_index_->file().Trim();
}

Status Segment::Activate(bool preallocate) {
  if (!preallocate) return Status::OK();
  HR_RETURN_IF_ERROR(offset_index_->file().Preallocate());
  return time_index_->file().Preallocate();
}

Status Segment::Sync() {
  HR_RETURN_IF_ERROR(SyncData());
  HR_RETURN_IF_ERROR(offset_index_->file().Sync());
  return time_index_->file().Sync();
}

Status Segment::SyncData() { return env_->Sync(fd_, log_path_, /*data_only=*/true); }

Status Segment::DeleteFiles() {
  std::string deleted_log = filename::DeletedPath(log_path_);
  HR_RETURN_IF_ERROR(env_->Rename(log_path_, deleted_log));
  log_path_ = deleted_log;
  HR_RETURN_IF_ERROR(offset_index_->file().RenameTo(filename::DeletedPath(offset_index_->file().path())));
  HR_RETURN_IF_ERROR(time_index_->file().RenameTo(filename::DeletedPath(time_index_->file().path())));
  for (const std::string& p : {log_path_, offset_index_->file().path(), time_index_->file().path()})
    if (Status st = env_->Unlink(p); !st.ok() && st.code() != StatusCode::kNotFound) return st;
  return Status::OK();
}

}  // namespace headrace
