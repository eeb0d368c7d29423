#include "broker/share/share_partition.h"

#include <algorithm>

namespace headrace::broker::share {

namespace {

bool Terminal(RecordState s) { return s == RecordState::kAcknowledged || s == RecordState::kArchived; }

bool KnownType(int8_t t) { return t >= 0 && t <= static_cast<int8_t>(AckType::kRenew); }

}  // namespace

const char* RecordStateName(RecordState s) {
  switch (s) {
    case RecordState::kAvailable: return "Available";
    case RecordState::kAcquired: return "Acquired";
    case RecordState::kAcknowledged: return "Acknowledged";
    case RecordState::kArchived: return "Archived";
  }
  return "?";
}

SharePartition::SharePartition(SharePartitionConfig config, int64_t start_offset,
                               const std::vector<StateBatch>& persisted)
    : config_(config), start_(start_offset), next_(start_offset) {
  for (const StateBatch& b : persisted) {
    int64_t first = std::max(b.first, next_);
    if (b.last < first) continue;
    if (first > next_) ranges_[next_] = Range{first, RecordState::kAvailable, 0, {}, 0};
    RecordState s = b.state == RecordState::kAcquired ? RecordState::kAvailable : b.state;
    ranges_[first] = Range{b.last + 1, s, b.delivery_count, {}, 0};
    next_ = b.last + 1;
  }
  AdvanceStart();
}

void SharePartition::SplitAt(int64_t offset) {
  if (offset <= start_ || offset >= next_) return;
  auto it = ranges_.upper_bound(offset);
  --it;
  if (it->first == offset) return;
  Range tail = it->second;
  it->second.end = offset;
  ranges_.emplace(offset, std::move(tail));
}

void SharePartition::Release(Ranges::iterator it) {
  Range& r = it->second;
  int64_t n = r.end - it->first;
  counters_.released += n;
  r.member.clear();
  r.deadline_ms = 0;
  if (r.delivery_count >= config_.delivery_count_limit) {
    r.state = RecordState::kArchived;
    counters_.archived += n;
  } else {
    r.state = RecordState::kAvailable;
  }
}

void SharePartition::AdvanceStart() {
  while (!ranges_.empty() && Terminal(ranges_.begin()->second.state)) {
    start_ = ranges_.begin()->second.end;
    ranges_.erase(ranges_.begin());
  }
  if (ranges_.empty()) start_ = next_;
}

std::vector<AcquiredRange> SharePartition::Acquire(std::string_view member, int64_t fetchable_end,
                                                   int32_t max_records, int64_t now_ms) {
  std::vector<AcquiredRange> out;
  int64_t remaining = max_records;
  int64_t deadline = now_ms + config_.record_lock_duration_ms;
  auto take = [&](int64_t first, int64_t end, int16_t count) {
    if (!out.empty() && out.back().last + 1 == first && out.back().delivery_count == count) {
      out.back().last = end - 1;
    } else {
      out.push_back(AcquiredRange{first, end - 1, count});
    }
    int64_t n = end - first;
    remaining -= n;
    counters_.acquired += n;
    if (count > 1) counters_.redelivered += n;
  };
  for (auto it = ranges_.begin(); it != ranges_.end() && remaining > 0; ++it) {
    if (it->first >= fetchable_end) break;
    if (it->second.state != RecordState::kAvailable) continue;
    int64_t cut = std::min({it->second.end, fetchable_end, it->first + remaining});
    SplitAt(cut);
    Range& r = it->second;
    r.state = RecordState::kAcquired;
    r.member.assign(member);
    r.deadline_ms = deadline;
    ++r.delivery_count;
    take(it->first, r.end, r.delivery_count);
  }
  int64_t window = static_cast<int64_t>(config_.max_in_flight_records) - (next_ - start_);
  int64_t n = std::min({remaining, window, fetchable_end - next_});
  if (n > 0) {
    ranges_[next_] = Range{next_ + n, RecordState::kAcquired, 1, std::string(member), deadline};
    take(next_, next_ + n, 1);
    next_ += n;
  }
  return out;
}

AckOutcome SharePartition::Acknowledge(std::string_view member, int64_t first, int64_t last,
                                       std::span<const int8_t> types, int64_t now_ms) {
  if (first > last) return AckOutcome::kInvalidRequest;
  if (types.size() != 1 && static_cast<int64_t>(types.size()) != last - first + 1) {
    return AckOutcome::kInvalidRequest;
  }
  for (int8_t t : types) {
    if (!KnownType(t)) return AckOutcome::kInvalidRequest;
  }
  if (first < start_ || last >= next_) return AckOutcome::kInvalidRecordState;
  // Check every offset before changing any.
  auto it = std::prev(ranges_.upper_bound(first));
  for (auto c = it; c != ranges_.end() && c->first <= last; ++c) {
    const Range& r = c->second;
    if (r.state != RecordState::kAcquired || r.member != member || r.deadline_ms <= now_ms) {
      return AckOutcome::kInvalidRecordState;
    }
  }
  // Runs of one type: [run, run_end).
  for (int64_t run = first; run <= last;) {
    auto type_at = [&](int64_t o) { return types.size() == 1 ? types[0] : types[o - first]; };
    int64_t run_end = run + 1;
    while (run_end <= last && type_at(run_end) == type_at(run)) ++run_end;
    SplitAt(run);
    SplitAt(run_end);
    for (auto c = ranges_.find(run); c != ranges_.end() && c->first < run_end; ++c) {
      Range& r = c->second;
      int64_t n = r.end - c->first;
      switch (static_cast<AckType>(type_at(run))) {
        case AckType::kAccept:
          r.state = RecordState::kAcknowledged;
          r.member.clear();
          counters_.acknowledged += n;
          break;
        case AckType::kGap:
        case AckType::kReject:
          r.state = RecordState::kArchived;
          r.member.clear();
          counters_.archived += n;
          break;
        case AckType::kRelease:
          Release(c);
          break;
        case AckType::kRenew:
          r.deadline_ms = now_ms + config_.record_lock_duration_ms;
          break;
      }
    }
    run = run_end;
  }
  AdvanceStart();
  return AckOutcome::kOk;
}

void SharePartition::ArchiveGaps(int64_t first, int64_t last) {
  first = std::max(first, start_);
  last = std::min(last, next_ - 1);
  if (first > last) return;
  SplitAt(first);
  SplitAt(last + 1);
  for (auto c = ranges_.find(first); c != ranges_.end() && c->first <= last; ++c) {
    Range& r = c->second;
    if (Terminal(r.state)) continue;
    r.state = RecordState::kArchived;
    r.member.clear();
    counters_.archived += r.end - c->first;
  }
  AdvanceStart();
}

template <typename Pred>
int64_t SharePartition::ReleaseWhere(Pred pred) {
  int64_t n = 0;
  for (auto it = ranges_.begin(); it != ranges_.end(); ++it) {
    if (it->second.state == RecordState::kAcquired && pred(it->second)) {
      n += it->second.end - it->first;
      Release(it);
    }
  }
  AdvanceStart();
  return n;
}

int64_t SharePartition::ExpireLocks(int64_t now_ms) {
  return ReleaseWhere([&](const Range& r) { return r.deadline_ms <= now_ms; });
}

int64_t SharePartition::ReleaseMember(std::string_view member) {
  return ReleaseWhere([&](const Range& r) { return r.member == member; });
}

int64_t SharePartition::next_lock_deadline_ms() const {
  int64_t best = -1;
  for (const auto& [first, r] : ranges_) {
    if (r.state == RecordState::kAcquired && (best < 0 || r.deadline_ms < best)) best = r.deadline_ms;
  }
  return best;
}

int64_t SharePartition::acquired_now() const {
  int64_t n = 0;
  for (const auto& [first, r] : ranges_) {
    if (r.state == RecordState::kAcquired) n += r.end - first;
  }
  return n;
}

std::vector<StateBatch> SharePartition::Snapshot() const {
  std::vector<StateBatch> out;
  for (const auto& [first, r] : ranges_) {
    RecordState s = r.state == RecordState::kAcquired ? RecordState::kAvailable : r.state;
    if (s == RecordState::kAvailable && r.delivery_count == 0) continue;
    if (!out.empty() && out.back().last + 1 == first && out.back().state == s &&
        out.back().delivery_count == r.delivery_count) {
      out.back().last = r.end - 1;
    } else {
      out.push_back(StateBatch{first, r.end - 1, s, r.delivery_count});
    }
  }
  return out;
}

}  // namespace headrace::broker::share
