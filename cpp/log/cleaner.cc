// One cleaning pass of a log (LogImpl::Cleanable / LogImpl::Clean): the
// cleanable range, the offset map, and the rewrite of each segment group.
// The rules are in cleaner.h; the swap itself is in cleaner_swap.cc.
#include <fcntl.h>

#include <algorithm>
#include <climits>
#include <unordered_map>

#include "log/cleaner.h"
#include "log/filename.h"
#include "log/log_impl.h"
#include "log/offset_map.h"
#include "log/record_batch_internal.h"

namespace headrace {

Result<CleanableState> Log::Cleanable(const CleanRequest&) {
  return Status::Unsupported("this log cannot be compacted");
}
Result<CleanReport> Log::Clean(const CleanRequest&) {
  return Status::Unsupported("this log cannot be compacted");
}

namespace {

constexpr int64_t kCleanReadahead = 256 << 10;
constexpr int64_t kWriteChunk = 64 << 10;  // also the throttle's step

// Pass-wide transaction bookkeeping for the marker rules (Kafka's
// CleanedTransactionMetadata): which producers had batches of an aborted
// or committed transaction read since their last marker.
class TxnTracker {
 public:
  explicit TxnTracker(const std::vector<CleanerAbortedTxn>& aborted) {
    for (const CleanerAbortedTxn& a : aborted) by_producer_[a.producer_id].push_back(a);
  }
  bool IsAborted(int64_t producer_id, Offset offset) const {
    auto it = by_producer_.find(producer_id);
    if (it == by_producer_.end()) return false;
    for (const CleanerAbortedTxn& a : it->second)
      if (a.first <= offset && offset <= a.last) return true;
    return false;
  }
  void OnAbortedBatch(int64_t pid) { aborted_seen_[pid] = true; }
  void OnCommittedBatch(int64_t pid) { committed_seen_[pid] = true; }
  // A marker of `pid`: true when no batch of its transaction was read in
  // this pass (the marker may go once its delete horizon passed).
  bool OnMarker(int64_t pid, bool commit) {
    auto& seen = commit ? committed_seen_ : aborted_seen_;
    auto it = seen.find(pid);
    bool had = it != seen.end() && it->second;
    if (it != seen.end()) it->second = false;
    return !had;
  }

 private:
  std::unordered_map<int64_t, std::vector<CleanerAbortedTxn>> by_producer_;
  std::unordered_map<int64_t, bool> aborted_seen_, committed_seen_;
};

// Buffered writer of the .cleaned file, throttled.
class CleanedWriter {
 public:
  CleanedWriter(FileEnv* env, std::string path, IoThrottler* throttler)
      : env_(env), path_(std::move(path)), throttler_(throttler) {}
  ~CleanedWriter() {
    if (fd_ >= 0) env_->Close(fd_);
  }
  Status Open() {
    HR_ASSIGN_OR_RETURN(fd_, env_->Open(path_, O_RDWR | O_CREAT | O_TRUNC));
    return Status::OK();
  }
  Status Add(std::span<const uint8_t> bytes) {
    buf_.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    return buf_.size() >= kWriteChunk ? Drain() : Status::OK();
  }
  // Writes what is buffered, fsyncs and closes.
  Status Finish() {
    HR_RETURN_IF_ERROR(Drain());
    HR_RETURN_IF_ERROR(env_->Sync(fd_, path_, /*data_only=*/false));
    env_->Close(fd_);
    fd_ = -1;
    return Status::OK();
  }
  int64_t size() const { return written_ + static_cast<int64_t>(buf_.size()); }
  const std::string& path() const { return path_; }

 private:
  Status Drain() {
    if (buf_.empty()) return Status::OK();
    HR_RETURN_IF_ERROR(env_->WriteAt(fd_, path_, buf_.data(), static_cast<int64_t>(buf_.size()), written_));
    written_ += static_cast<int64_t>(buf_.size());
    if (throttler_) throttler_->Throttle(static_cast<int64_t>(buf_.size()));
    buf_.clear();
    return Status::OK();
  }
  FileEnv* env_;
  std::string path_;
  IoThrottler* throttler_;
  int fd_ = -1;
  std::string buf_;
  int64_t written_ = 0;
};

bool Stopped(const CleanRequest& req) {
  return req.stop != nullptr && req.stop->load(std::memory_order_relaxed);
}

}  // namespace

size_t LogImpl::CleanableCountLocked(const CleanRequest& req) const {
  size_t n = 0;
  for (size_t i = 0; i + 1 < segments_.size(); ++i) {
    Offset next = segments_[i + 1]->base_offset();
    // Whole segments below the bound and below the segment holding the
    // flush point (so a cleaned segment is never re-validated record by
    // record at recovery, docs/compaction.md).
    if (next > req.clean_below || next > flush_segment_) break;
    if (req.min_compaction_lag_ms > 0) {
      TimestampMs ts = segments_[i]->max_timestamp().first;
      if (ts.value() > req.now_ms - req.min_compaction_lag_ms) break;
    }
    n = i + 1;
  }
  return n;
}

void LogImpl::LoadCleanerCheckpointLocked() {
  if (cleaner_cp_) return;
  cleaner_cp_ = ReadCleanerCheckpoint(*env_, dir_);
}

Result<CleanableState> LogImpl::Cleanable(const CleanRequest& req) {
  std::lock_guard<std::mutex> clean(clean_mu_);
  LoadCleanerCheckpointLocked();
  std::lock_guard<std::mutex> lock(append_mu_);
  if (closed_.load()) return Status::Closed(dir_);
  if (failed()) return OfflineError();
  CleanableState st;
  size_t n = CleanableCountLocked(req);
  Offset first = std::max(cleaner_cp_->first_dirty, segments_.front()->base_offset());
  if (first > end_offset()) first = segments_.front()->base_offset();  // truncated below it
  st.first_dirty = first;
  st.first_uncleanable = n > 0 ? segments_[n]->base_offset() : segments_.front()->base_offset();
  for (size_t i = 0; i < n; ++i) {
    const Segment& s = *segments_[i];
    if (segments_[i + 1]->base_offset() <= first) {
      st.clean_bytes += s.size();
      auto known = cleaner_cp_->segments.find(s.base_offset().value());
      if (known != cleaner_cp_->segments.end() && known->second.pending_deletes > 0 &&
          known->second.cleaned_ms <= req.now_ms - req.delete_retention_ms)
        st.horizon_due = true;
    } else {
      if (st.dirty_bytes == 0) st.first_dirty_timestamp = s.max_timestamp().first.value();
      st.dirty_bytes += s.size();
    }
  }
  return st;
}

Result<CleanReport> LogImpl::Clean(const CleanRequest& req) {
  const int64_t started = WallClockMs();
  std::lock_guard<std::mutex> clean(clean_mu_);
  // An I/O error writing a .cleaned file takes the log offline (Fence,
  // under the append lock as its contract asks), unless the log was closed
  // or abandoned meanwhile (a deleted partition): then the pass just ends.
  auto fail = [this](Status st) -> Status {
    if (st.ok()) return st;
    std::lock_guard<std::mutex> lock(append_mu_);
    if (closed_.load()) return Status::Closed(dir_ + ": closed during cleaning");
    return Fence(std::move(st));
  };
  LoadCleanerCheckpointLocked();
  CleanReport report;
  std::vector<std::shared_ptr<Segment>> segs;
  size_t n = 0;
  {
    std::lock_guard<std::mutex> lock(append_mu_);
    if (closed_.load()) return Status::Closed(dir_);
    if (failed()) return OfflineError();
    n = CleanableCountLocked(req);
    segs.assign(segments_.begin(), segments_.begin() + static_cast<std::ptrdiff_t>(n + (n > 0)));
    // The on-disk flush point must not lag behind the segments cleaned:
    // recovery trusts (header-checks only) everything below it.
    std::lock_guard<std::mutex> cp(checkpoint_mu_);
    if (n > 0) HR_RETURN_IF_ERROR(Fence(WriteCheckpointLocked(/*sync=*/true)));
  }
  Offset first_dirty = cleaner_cp_->first_dirty;
  if (n == 0) return report;
  if (first_dirty > end_offset() || first_dirty < segs.front()->base_offset())
    first_dirty = segs.front()->base_offset();
  report.first_dirty_before = report.first_dirty_after = first_dirty;
  const Offset cleanable_end = segs[n]->base_offset();
  bool horizon_due = false;
  for (size_t i = 0; i < n && segs[i + 1]->base_offset() <= first_dirty; ++i) {
    auto known = cleaner_cp_->segments.find(segs[i]->base_offset().value());
    if (known != cleaner_cp_->segments.end() && known->second.pending_deletes > 0 &&
        known->second.cleaned_ms <= req.now_ms - req.delete_retention_ms)
      horizon_due = true;
  }
  if (first_dirty >= cleanable_end && !horizon_due) return report;

  // ---- the offset map over the dirty part ----
  OffsetMap map(req.dedupe_buffer_bytes);
  TxnTracker aborted_only(req.aborted);  // only IsAborted is used here
  Offset map_end = first_dirty;
  std::string scratch;
  bool full = false;
  for (size_t i = 0; i < n && !full; ++i) {
    const Segment& s = *segs[i];
    if (segs[i + 1]->base_offset() <= first_dirty) continue;
    const int64_t limit = s.size();
    FileReader reader = s.Reader(limit, kCleanReadahead);
    HR_ASSIGN_OR_RETURN(int64_t pos, s.FindPosition(first_dirty, limit, &reader));
    while (pos < limit) {
      if (Stopped(req)) return Status::Closed("cleaning of " + dir_ + " stopped");
      HR_ASSIGN_OR_RETURN(const uint8_t* p, reader.Peek(pos, kBatchHeaderSize));
      BatchHeader h = batch::DecodeHeader(p);
      HR_ASSIGN_OR_RETURN(p, reader.Peek(pos, h.total_size()));
      std::span<const uint8_t> b(p, static_cast<size_t>(h.total_size()));
      report.bytes_read += h.total_size();
      if (req.throttler) req.throttler->Throttle(h.total_size());
      if (!h.is_control() && !(h.is_transactional() && aborted_only.IsAborted(h.producer_id, h.base_offset))) {
        if (h.record_count > map.room()) {
          if (map_end == first_dirty)
            return Status::InvalidArgument(
                "log.cleaner.dedupe.buffer.size too small for one batch of " + dir_);
          full = true;
          break;
        }
        HR_ASSIGN_OR_RETURN(std::span<const uint8_t> section, batch::RecordsSection(b, &scratch));
        HR_RETURN_IF_ERROR(batch::ForEachRawRecord(section, h.record_count,
                                                   [&](const batch::RawRecord& r) -> Status {
                                                     if (r.has_key)
                                                       map.Put(r.key, (h.base_offset + r.offset_delta).value());
                                                     return Status::OK();
                                                   }));
      }
      map_end = h.last_offset() + 1;
      pos += h.total_size();
    }
    if (!full) map_end = segs[i + 1]->base_offset();
  }
  report.map_keys = map.size();

  // ---- rewrite every segment below map_end, in groups ----
  size_t k = 0;  // segments [0, k) hold offsets below map_end
  while (k < n && segs[k]->base_offset() < map_end) ++k;
  std::vector<std::pair<size_t, size_t>> groups;  // [begin, end) indexes into segs
  for (size_t i = 0; i < k;) {
    size_t j = i + 1;
    int64_t bytes = segs[i]->size();
    while (j < k && bytes + segs[j]->size() <= req.max_segment_bytes &&
           segs[j + 1]->base_offset() - segs[i]->base_offset() <= INT32_MAX) {
      bytes += segs[j]->size();
      ++j;
    }
    groups.emplace_back(i, j);
    i = j;
  }
  TxnTracker txns(req.aborted);
  CleanerCheckpoint next_cp;
  const Offset clean_before = first_dirty;  // segments ending at/below it were clean
  for (const auto& [gb, ge] : groups) {
    const Offset base = segs[gb]->base_offset();
    CleanedWriter out(env_, filename::SegmentPath(dir_, base, filename::FileKind::kLog) +
                                std::string(filename::kCleanedSuffix), req.throttler);
    HR_RETURN_IF_ERROR(fail(out.Open()));
    int64_t group_cleaned_ms = INT64_MIN;
    int64_t pending = 0;  // tombstones / markers kept only until their horizon
    std::vector<std::pair<int64_t, int64_t>> aborts_kept, aborts_all;
    int64_t in_bytes = 0;
    for (size_t i = gb; i < ge; ++i) {
      const Segment& s = *segs[i];
      const bool was_clean = segs[i + 1]->base_offset() <= clean_before;
      auto known = cleaner_cp_->segments.find(s.base_offset().value());
      const bool timed = was_clean && known != cleaner_cp_->segments.end();
      int64_t cleaned_at = timed ? known->second.cleaned_ms : req.now_ms;
      group_cleaned_ms = std::max(group_cleaned_ms, cleaned_at);
      const bool horizon_passed = timed && cleaned_at <= req.now_ms - req.delete_retention_ms;
      const int64_t limit = s.size();
      in_bytes += limit;
      FileReader reader = s.Reader(limit, kCleanReadahead);
      for (int64_t pos = 0; pos < limit;) {
        if (Stopped(req)) {
          (void)env_->Unlink(out.path());
          return Status::Closed("cleaning of " + dir_ + " stopped");
        }
        HR_ASSIGN_OR_RETURN(const uint8_t* p, reader.Peek(pos, kBatchHeaderSize));
        BatchHeader h = batch::DecodeHeader(p);
        HR_ASSIGN_OR_RETURN(p, reader.Peek(pos, h.total_size()));
        std::span<const uint8_t> b(p, static_cast<size_t>(h.total_size()));
        pos += h.total_size();
        report.bytes_read += h.total_size();
        if (req.throttler) req.throttler->Throttle(h.total_size());
        if (h.base_offset >= map_end) {  // not mapped yet: untouched
          HR_RETURN_IF_ERROR(fail(out.Add(b)));
          continue;
        }
        if (h.is_control()) {
          bool discard = false;
          if (h.producer_id >= 0) {
            Result<EndTxnMarker> m = ParseEndTxnMarker(b);
            if (m.ok()) {
              if (!m->commit) aborts_all.emplace_back(h.producer_id, h.base_offset.value());
              const bool no_data = txns.OnMarker(h.producer_id, m->commit);
              discard = no_data && horizon_passed;
              // An ABORT marker's data goes in this very pass, so it too
              // only waits for its horizon now.
              if (!discard && (no_data || !m->commit)) ++pending;
            }
          }
          if (discard) {
            report.batches_removed++;
            report.records_removed += h.record_count;
          } else {
            if (!aborts_all.empty() && aborts_all.back().second == h.base_offset.value())
              aborts_kept.push_back(aborts_all.back());
            HR_RETURN_IF_ERROR(fail(out.Add(b)));
          }
          continue;
        }
        if (h.is_transactional() && txns.IsAborted(h.producer_id, h.base_offset)) {
          txns.OnAbortedBatch(h.producer_id);
          report.batches_removed++;
          report.records_removed += h.record_count;
          continue;
        }
        if (h.is_transactional()) txns.OnCommittedBatch(h.producer_id);
        if (h.producer_id >= 0) {
          auto last = req.producer_last_offsets.find(h.producer_id);
          if (last != req.producer_last_offsets.end() && last->second == h.last_offset().value()) {
            HR_RETURN_IF_ERROR(fail(out.Add(b)));  // the producer's last batch: kept whole
            continue;
          }
        }
        HR_ASSIGN_OR_RETURN(std::span<const uint8_t> section, batch::RecordsSection(b, &scratch));
        std::string kept;
        int32_t kept_count = 0;
        HR_RETURN_IF_ERROR(batch::ForEachRawRecord(
            section, h.record_count, [&](const batch::RawRecord& r) -> Status {
              const int64_t offset = (h.base_offset + r.offset_delta).value();
              bool keep = true;
              if (r.has_key && offset < map_end.value() && map.Get(r.key) > offset) keep = false;
              if (keep && r.null_value && r.has_key) {
                if (horizon_passed) keep = false;
                else ++pending;
              }
              if (keep) {
                kept.append(reinterpret_cast<const char*>(r.bytes.data()), r.bytes.size());
                ++kept_count;
              }
              return Status::OK();
            }));
        report.records_removed += h.record_count - kept_count;
        if (kept_count == h.record_count) {
          HR_RETURN_IF_ERROR(fail(out.Add(b)));
        } else if (kept_count == 0) {
          report.batches_removed++;
        } else {
          HR_ASSIGN_OR_RETURN(std::string rebuilt,
                              batch::RebuildBatch(b, {reinterpret_cast<const uint8_t*>(kept.data()),
                                                      kept.size()},
                                                  kept_count));
          HR_RETURN_IF_ERROR(fail(out.Add({reinterpret_cast<const uint8_t*>(rebuilt.data()),
                                            rebuilt.size()})));
        }
      }
    }
    HR_RETURN_IF_ERROR(fail(out.Finish()));
    const int64_t out_bytes = out.size();
    std::vector<std::shared_ptr<Segment>> olds(segs.begin() + static_cast<std::ptrdiff_t>(gb),
                                               segs.begin() + static_cast<std::ptrdiff_t>(ge));
    HR_ASSIGN_OR_RETURN(bool swapped, SwapIn(olds, base));
    std::vector<std::pair<int64_t, int64_t>>& kept = swapped ? aborts_kept : aborts_all;
    report.abort_markers_kept.insert(report.abort_markers_kept.end(), kept.begin(), kept.end());
    if (!swapped) continue;  // retention or truncation got there first
    report.cleaned = true;
    report.segments_in += static_cast<int>(ge - gb);
    report.segments_out++;
    report.bytes_in += in_bytes;
    report.bytes_out += out_bytes;
    next_cp.segments[base.value()] = {group_cleaned_ms, pending};
  }
  next_cp.first_dirty = map_end;
  HR_RETURN_IF_ERROR(WriteCleanerCheckpoint(*env_, dir_, next_cp));
  cleaner_cp_ = next_cp;
  report.first_dirty_after = map_end;
  report.elapsed_ms = WallClockMs() - started;
  return report;
}

}  // namespace headrace
