#include "broker/partition/leader_epoch_cache.h"

#include <algorithm>

#include "broker/base/checkpoint_text.h"
#include "common/file_env.h"

namespace headrace::broker {

Result<bool> LeaderEpochCache::Load() {
  entries_.clear();
  if (dir_.empty()) return false;
  const std::string path = dir_ + "/" + kFileName;
  Result<std::string> text = ReadWholeFile(*env_, path);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) return false;
    return text.status();
  }
  std::vector<EpochEntry> entries;
  HR_RETURN_IF_ERROR(ParseCheckpointText(*text, path, [&](std::istream& in) -> std::string {
    int64_t epoch = -1, start = -1;
    if (!(in >> epoch >> start)) return "missing";
    if (epoch < 0 || epoch > INT32_MAX || start < 0) return "out of range";
    if (!entries.empty() && (epoch <= entries.back().epoch.value() ||
                             start < entries.back().start_offset.value())) {
      return "not ascending";
    }
    entries.push_back({LeaderEpoch(static_cast<int32_t>(epoch)), Offset(start)});
    return "";
  }));
  entries_ = std::move(entries);
  return true;
}

std::optional<std::string> LeaderEpochCache::TakeDirtyFile() {
  if (!dirty_ || dir_.empty()) return std::nullopt;
  dirty_ = false;
  std::vector<std::string> lines;
  lines.reserve(entries_.size());
  for (const EpochEntry& e : entries_) {
    lines.push_back(std::to_string(e.epoch.value()) + " " + std::to_string(e.start_offset.value()));
  }
  return FormatCheckpointText(lines);
}

Status LeaderEpochCache::WriteFile(const std::string& contents) const {
  return WriteFileAtomically(*env_, dir_, kFileName, contents);
}

Status LeaderEpochCache::Flush() {
  std::optional<std::string> text = TakeDirtyFile();
  if (!text) return Status::OK();
  Status st = WriteFile(*text);
  if (!st.ok()) dirty_ = true;  // still to be written
  return st;
}

Status LeaderEpochCache::Assign(LeaderEpoch epoch, Offset start_offset) {
  if (epoch.value() < 0) return Status::InvalidArgument("leader epoch must be >= 0");
  if (!entries_.empty() && entries_.back().epoch == epoch) return Status::OK();
  // A larger epoch, or one that starts at/after this one, is a stale tail.
  std::erase_if(entries_, [&](const EpochEntry& e) {
    return e.epoch >= epoch || e.start_offset >= start_offset;
  });
  entries_.push_back({epoch, start_offset});
  dirty_ = true;
  return Status::OK();
}

EpochEndOffset LeaderEpochCache::EndOffsetFor(LeaderEpoch requested, Offset leo) const {
  if (requested.value() < 0 || entries_.empty()) return {};
  if (requested == entries_.back().epoch) return {requested, leo};
  auto higher = std::upper_bound(entries_.begin(), entries_.end(), requested,
                                 [](LeaderEpoch r, const EpochEntry& e) { return r < e.epoch; });
  if (higher == entries_.end()) return {};  // newer than anything this log knows
  if (higher == entries_.begin()) {
    // Older than every known epoch: its data, if any, lies below the first
    // known epoch's start.
    return {requested, higher->start_offset};
  }
  return {std::prev(higher)->epoch, higher->start_offset};
}

Status LeaderEpochCache::TruncateFromEnd(Offset end) {
  size_t before = entries_.size();
  std::erase_if(entries_, [&](const EpochEntry& e) { return e.start_offset >= end; });
  if (entries_.size() != before) dirty_ = true;
  return Status::OK();
}

Status LeaderEpochCache::TruncateFromStart(Offset start) {
  // The last entry starting at or below `start` covers it; older ones go.
  auto covering = std::upper_bound(entries_.begin(), entries_.end(), start,
                                   [](Offset s, const EpochEntry& e) { return s < e.start_offset; });
  if (covering == entries_.begin()) return Status::OK();
  --covering;
  if (covering == entries_.begin() && covering->start_offset == start) return Status::OK();
  covering->start_offset = start;
  entries_.erase(entries_.begin(), covering);
  dirty_ = true;
  return Status::OK();
}

void LeaderEpochCache::Reset(std::vector<EpochEntry> entries) {
  entries_ = std::move(entries);
  dirty_ = true;
}

}  // namespace headrace::broker
