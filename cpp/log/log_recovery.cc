// Log::Open: loading a directory and recovering it. The contract (what is
// trusted, what is cut, what is reported) is in docs/log-format.md.
#include <algorithm>
#include <climits>
#include <filesystem>

#include "log/filename.h"
#include "log/log_impl.h"

namespace headrace {

Result<std::unique_ptr<Log>> Log::Open(const std::string& dir, const LogConfig& config,
                                       FileEnv* env) {
  auto log = std::make_unique<LogImpl>(dir, config, env != nullptr ? env : FileEnv::Default());
  HR_RETURN_IF_ERROR(log->Recover());
  return std::unique_ptr<Log>(std::move(log));
}

Status LogImpl::ListDirectory(std::vector<Offset>* bases) {
  const bool existed = env_->StatPath(dir_).ok();
  HR_RETURN_IF_ERROR(env_->CreateDirs(dir_));
  if (!existed) {
    // The new directory's entry in its parent is durable before anything
    // written into it can be reported flushed.
    std::string parent = std::filesystem::path(dir_).parent_path().string();
    HR_RETURN_IF_ERROR(env_->SyncDir(parent.empty() ? "." : parent));
  }
  HR_ASSIGN_OR_RETURN(std::vector<std::string> names, env_->ListDir(dir_));
  // A cleaning pass cut short: finish or discard it first (cleaner_swap.cc).
  HR_RETURN_IF_ERROR(FinishSwaps(names));
  HR_ASSIGN_OR_RETURN(names, env_->ListDir(dir_));
  std::vector<std::string> leftovers;
  std::vector<std::pair<Offset, filename::FileKind>> indexes;
  for (const std::string& name : names) {
    auto parsed = filename::Parse(name);
    if (!parsed) continue;
    if (parsed->type == filename::ParsedName::Type::kCheckpointTemp || parsed->deleted) {
      leftovers.push_back(dir_ + "/" + name);
    } else if (parsed->type == filename::ParsedName::Type::kSegmentFile) {
      if (parsed->kind == filename::FileKind::kLog)
        bases->push_back(parsed->base);
      else
        indexes.emplace_back(parsed->base, parsed->kind);
    }
  }
  std::sort(bases->begin(), bases->end());
  for (const auto& [base, kind] : indexes)  // an index without its .log is garbage
    if (!std::binary_search(bases->begin(), bases->end(), base))
      leftovers.push_back(filename::SegmentPath(dir_, base, kind));
  for (const std::string& p : leftovers)
    if (Status st = env_->Unlink(p); !st.ok() && st.code() != StatusCode::kNotFound) return st;
  return Status::OK();
}

// Cuts segment i at the end of its valid prefix and drops every later one.
Status LogImpl::CutTail(size_t i, const ScanOutcome& outcome, const std::string& why) {
  Segment& seg = *segments_[i];
  HR_ASSIGN_OR_RETURN(int64_t file_size, seg.FileSize());
  int64_t cut = file_size - outcome.valid_size;
  for (size_t j = i + 1; j < segments_.size(); ++j) cut += segments_[j]->size();
  HR_RETURN_IF_ERROR(DeleteNewestSegments(i));
  HR_RETURN_IF_ERROR(seg.TruncateTo(outcome.valid_size, outcome.next_offset));
  report_.truncated_bytes += cut;
  report_.truncated_at = outcome.next_offset;
  report_.reason = seg.log_path() + ": " + why;
  return Status::OK();
}

// Loads segment i: trusted (indexes checked, rebuilt if bad) or recovered
// (scanned, tail validated, indexes rebuilt). Sets *next to the offset after
// its last valid batch and *stop after a cut.
Status LogImpl::RecoverSegment(size_t i, const std::optional<Checkpoint>& cp, Offset* next,
                               bool* stop) {
  Segment& seg = *segments_[i];
  const bool last = i + 1 == segments_.size();
  const int64_t limit = last ? INT32_MAX : segments_[i + 1]->base_offset() - seg.base_offset();
  const bool clean = cp && cp->clean_shutdown;
  const bool recover = !clean && (!cp || seg.base_offset() >= cp->recovery_segment);
  int64_t verify_from = 0;
  if (recover && cp && seg.base_offset() == cp->recovery_segment && seg.size() >= cp->recovery_position)
    verify_from = cp->recovery_position;
  if (!recover && !seg.indexes_were_missing()) {
    auto loaded = seg.LoadTrusted(limit, config_.index_interval_bytes);
    // A cleaned segment may end before the next one starts (cleaner.h).
    if (loaded.ok() && (last || *loaded - seg.base_offset() <= limit)) {
      *next = *loaded;
      return Status::OK();
    }
  }
  // A recovered segment's indexes are always rebuilt by the scan; report it
  // when they were missing (garbled ones are indistinguishable from stale).
  if (!recover || seg.indexes_were_missing()) report_.indexes_rebuilt = true;
  if (!recover) verify_from = INT64_MAX;  // flushed data: headers only
  HR_ASSIGN_OR_RETURN(ScanOutcome outcome, seg.ScanAndRebuild(verify_from, config_.index_interval_bytes));
  if (outcome.error.empty() && !last && outcome.next_offset - seg.base_offset() > limit)
    outcome.error = "offsets end at " + std::to_string(outcome.next_offset.value()) +
                    " past the next segment's start " +
                    std::to_string(segments_[i + 1]->base_offset().value());
  *next = outcome.next_offset;
  if (outcome.error.empty()) return Status::OK();
  *stop = true;
  return CutTail(i, outcome, outcome.error);
}

Status LogImpl::Recover() {
  Status st = Fence(RecoverDirectory());
  if (!st.ok()) closed_.store(true);  // a half-opened log is never flushed or closed
  return st;
}

Status LogImpl::RecoverDirectory() {
  std::vector<Offset> bases;
  HR_RETURN_IF_ERROR(ListDirectory(&bases));
  auto cp_or = ReadCheckpoint(*env_, dir_);
  std::optional<Checkpoint> cp;
  if (cp_or.ok()) cp = *cp_or;  // a garbled checkpoint = none: recover everything
  for (Offset base : bases) {
    HR_ASSIGN_OR_RETURN(std::shared_ptr<Segment> s, Segment::Open(env_, dir_, base, config_));
    segments_.push_back(std::move(s));
  }
  report_.segments = static_cast<int>(segments_.size());
  bool stop = false;
  Offset end(0);
  for (size_t i = 0; i < segments_.size() && !stop; ++i)
    HR_RETURN_IF_ERROR(RecoverSegment(i, cp, &end, &stop));
  return FinishRecovery(cp, end);
}

// Sets the offsets, makes sure an active segment exists, makes what was
// recovered durable and writes a fresh (unclean) checkpoint.
Status LogImpl::FinishRecovery(const std::optional<Checkpoint>& cp, Offset end) {
  Offset start = cp ? cp->log_start_offset : Offset(0);
  if (!segments_.empty()) start = std::max(start, segments_.front()->base_offset());
  if (segments_.empty() || start > end) {
    // Nothing on disk, or nothing at or above the start offset: begin afresh.
    for (const auto& s : segments_) HR_RETURN_IF_ERROR(s->DeleteFiles());
    segments_.clear();
    HR_ASSIGN_OR_RETURN(std::shared_ptr<Segment> s, Segment::Create(env_, dir_, start, config_));
    segments_.push_back(std::move(s));
    end = start;
  }
  const bool clean = cp && cp->clean_shutdown;
  for (size_t i = 0; i < segments_.size(); ++i) {
    Segment& s = *segments_[i];
    if (i + 1 < segments_.size()) HR_RETURN_IF_ERROR(s.Seal());
    if (!clean && (!cp || s.base_offset() >= cp->recovery_segment)) HR_RETURN_IF_ERROR(s.Sync());
  }
  Segment& active = *segments_.back();
  HR_RETURN_IF_ERROR(active.Activate(config_.preallocate_indexes));
  const int64_t now = WallClockMs();
  active.EnsureRollingBase(now);
  last_flush_ms_ = now;
  start_offset_.store(start.value());
  end_offset_.store(end.value());
  std::lock_guard<std::mutex> lock(checkpoint_mu_);
  SetFlushPointLocked(end, active.base_offset(), active.size());
  checkpoint_.clean_shutdown = false;
  return WriteCheckpointLocked(/*sync=*/true);
}

}  // namespace headrace
