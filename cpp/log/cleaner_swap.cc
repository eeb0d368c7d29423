// Crash-safe segment replacement for the log cleaner, its recovery at
// Log::Open, the cleaner checkpoint file and the I/O throttle.
//
// Protocol (docs/compaction.md): the group's cleaned bytes are written to
// <base>.log.cleaned and fsynced; the rename to <base>.log.swap is the
// commit point; then the replaced segments' files are deleted (renamed
// .deleted, unlinked), the swap is renamed to <base>.log and the directory
// fsynced. At open: a .cleaned file is deleted (the old segments are
// intact); a .swap file replaces every .log whose base lies in [swap base,
// swap's last offset] (or equals the swap base, for an empty swap) and is
// renamed to .log. A crash at any step therefore leaves either the old
// segments or the complete new one, never a mix that loses an offset.
#include <fcntl.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <thread>

#include "common/crc32c.h"
#include "log/cleaner.h"
#include "log/filename.h"
#include "log/log_impl.h"
#include "log/record_batch_internal.h"

namespace headrace {

// ---- throttle ----

void IoThrottler::SetRate(double bytes_per_second) {
  std::lock_guard<std::mutex> l(mu_);
  rate_ = bytes_per_second > 0 && bytes_per_second < 1e300 ? bytes_per_second : 0;
}

int64_t IoThrottler::Throttle(int64_t bytes) {
  std::unique_lock<std::mutex> l(mu_);
  if (rate_ <= 0) return 0;
  using namespace std::chrono;
  window_bytes_ += static_cast<double>(bytes);
  auto now = steady_clock::now();
  double elapsed = duration<double>(now - window_start_).count();
  double needed = window_bytes_ / rate_;  // seconds the bytes so far may take
  int64_t slept = 0;
  if (needed > elapsed) {
    slept = static_cast<int64_t>((needed - elapsed) * 1000);
    l.unlock();
    std::this_thread::sleep_for(duration<double>(needed - elapsed));
    l.lock();
    total_sleep_ms_ += slept;
  }
  // A fresh window every second or so keeps an idle spell from being banked.
  if (duration<double>(steady_clock::now() - window_start_).count() > 1.0) {
    window_start_ = steady_clock::now();
    window_bytes_ = 0;
  }
  return slept;
}

// ---- checkpoint ----

CleanerCheckpoint ReadCleanerCheckpoint(FileEnv& env, const std::string& dir) {
  CleanerCheckpoint c;
  Result<std::string> text = ReadWholeFile(env, dir + "/" + kCleanerCheckpointName);
  if (!text.ok()) return c;
  const char* buf = text->c_str();
  int64_t first = 0, count = 0;
  int used = 0;
  if (std::sscanf(buf, "headrace-cleaner-checkpoint v1\nfirst_dirty %" SCNd64 "\nsegments %" SCNd64 "\n%n",
                  &first, &count, &used) != 2 || used == 0 || count < 0)
    return c;
  CleanerCheckpoint r;
  r.first_dirty = Offset(first);
  const char* p = buf + used;
  for (int64_t i = 0; i < count; ++i) {
    int64_t base, ms, pending;
    int n = 0;
    if (std::sscanf(p, "%" SCNd64 " %" SCNd64 " %" SCNd64 "\n%n", &base, &ms, &pending, &n) != 3 ||
        n == 0)
      return c;
    r.segments[base] = {ms, pending};
    p += n;
  }
  unsigned crc;
  if (std::sscanf(p, "crc32c %u", &crc) != 1 || crc32c::Value(buf, p - buf) != crc) return c;
  return r;
}

Status WriteCleanerCheckpoint(FileEnv& env, const std::string& dir, const CleanerCheckpoint& c) {
  std::string body = "headrace-cleaner-checkpoint v1\nfirst_dirty " +
                     std::to_string(c.first_dirty.value()) + "\nsegments " +
                     std::to_string(c.segments.size()) + "\n";
  for (const auto& [base, seg] : c.segments)
    body += std::to_string(base) + " " + std::to_string(seg.cleaned_ms) + " " +
            std::to_string(seg.pending_deletes) + "\n";
  body += "crc32c " + std::to_string(crc32c::Value(body.data(), body.size())) + "\n";
  return WriteFileAtomically(env, dir, kCleanerCheckpointName, body, /*sync=*/true);
}

// ---- swap ----

Result<bool> LogImpl::SwapIn(const std::vector<std::shared_ptr<Segment>>& olds, Offset base) {
  const std::string log_path = filename::SegmentPath(dir_, base, filename::FileKind::kLog);
  const std::string cleaned = log_path + std::string(filename::kCleanedSuffix);
  const std::string swap = log_path + std::string(filename::kSwapSuffix);
  std::lock_guard<std::mutex> lock(append_mu_);
  auto it = std::find(segments_.begin(), segments_.end(), olds.front());
  bool intact = !closed_.load() && !failed() &&
                static_cast<size_t>(segments_.end() - it) > olds.size();  // never the active one
  for (size_t i = 0; intact && i < olds.size(); ++i) intact = *(it + static_cast<std::ptrdiff_t>(i)) == olds[i];
  if (!intact) {
    (void)env_->Unlink(cleaned);
    return false;
  }
  HR_RETURN_IF_ERROR(Fence(env_->Rename(cleaned, swap)));  // the commit point
  HR_RETURN_IF_ERROR(Fence(env_->SyncDir(dir_)));
  for (const auto& s : olds) HR_RETURN_IF_ERROR(Fence(s->DeleteFiles()));
  HR_RETURN_IF_ERROR(Fence(env_->Rename(swap, log_path)));
  HR_RETURN_IF_ERROR(Fence(env_->SyncDir(dir_)));
  HR_ASSIGN_OR_RETURN(std::shared_ptr<Segment> seg, Segment::Open(env_, dir_, base, config_));
  HR_ASSIGN_OR_RETURN(ScanOutcome outcome, seg->ScanAndRebuild(INT64_MAX, config_.index_interval_bytes));
  if (!outcome.error.empty())
    return Fence(Status::IOError(seg->log_path() + ": cleaned segment unreadable: " + outcome.error));
  HR_RETURN_IF_ERROR(Fence(seg->Seal()));
  HR_RETURN_IF_ERROR(Fence(seg->Sync()));
  {
    std::unique_lock<std::shared_mutex> w(segments_mu_);
    auto pos = std::find(segments_.begin(), segments_.end(), olds.front());
    pos = segments_.erase(pos, pos + static_cast<std::ptrdiff_t>(olds.size()));
    segments_.insert(pos, std::move(seg));
  }
  return true;
}

Status LogImpl::FinishSwaps(const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    if (name.ends_with(".log" + std::string(filename::kCleanedSuffix))) {
      HR_RETURN_IF_ERROR(env_->Unlink(dir_ + "/" + name));
    }
  }
  for (const std::string& name : names) {
    if (!name.ends_with(".log" + std::string(filename::kSwapSuffix))) continue;
    std::string log_name = name.substr(0, name.size() - filename::kSwapSuffix.size());
    std::optional<filename::ParsedName> parsed = filename::Parse(log_name);
    if (!parsed || parsed->kind != filename::FileKind::kLog || parsed->deleted) continue;
    const Offset base = parsed->base;
    const std::string swap = dir_ + "/" + name;
    // The swap's last offset: a header walk (it was fsynced before its rename).
    HR_ASSIGN_OR_RETURN(FileStat st, env_->StatPath(swap));
    HR_ASSIGN_OR_RETURN(int fd, env_->Open(swap, O_RDONLY));
    Offset last = base;
    {
      FileReader reader(env_, fd, st.size, 1 << 16);
      for (int64_t pos = 0; pos + kBatchHeaderSize <= st.size;) {
        auto p = reader.Peek(pos, kBatchHeaderSize);
        if (!p.ok()) break;
        BatchHeader h = batch::DecodeHeader(*p);
        if (h.batch_length < batch::kMinBatchLength) break;
        last = std::max(last, h.last_offset());
        pos += h.total_size();
      }
    }
    env_->Close(fd);
    for (const std::string& other : names) {
      std::optional<filename::ParsedName> o = filename::Parse(other);
      if (!o || o->deleted || o->type != filename::ParsedName::Type::kSegmentFile) continue;
      if (o->base < base || o->base > last) continue;
      Status u = env_->Unlink(dir_ + "/" + other);
      if (!u.ok() && u.code() != StatusCode::kNotFound) return u;
    }
    HR_RETURN_IF_ERROR(env_->Rename(swap, filename::SegmentPath(dir_, base, filename::FileKind::kLog)));
    HR_RETURN_IF_ERROR(env_->SyncDir(dir_));
  }
  return Status::OK();
}

}  // namespace headrace
