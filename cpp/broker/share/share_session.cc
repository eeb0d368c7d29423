#include "broker/share/share_session.h"

#include <chrono>
#include <limits>

namespace headrace::broker::share {

int32_t NextShareSessionEpoch(int32_t epoch) {
  return epoch == std::numeric_limits<int32_t>::max() ? 1 : epoch + 1;
}

ShareSessionCache::ShareSessionCache(int32_t max_sessions, int64_t idle_ms,
                                     std::function<int64_t()> now_ms)
    : max_sessions_(max_sessions),
      idle_ms_(idle_ms),
      now_ms_(now_ms ? std::move(now_ms) : [] {
        return std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now().time_since_epoch())
            .count();
      }) {}

SessionUpdate ShareSessionCache::Step(const Key& key, int32_t epoch,
                                      std::map<Key, Session>::iterator* it) {
  SessionUpdate out;
  *it = sessions_.find(key);
  if (*it == sessions_.end()) {
    out.outcome = SessionOutcome::kNotFound;
    return out;
  }
  Session& s = (*it)->second;
  if (epoch == -1) {
    out.partitions.assign(s.partitions.begin(), s.partitions.end());
    sessions_.erase(*it);
    *it = sessions_.end();
    return out;
  }
  if (epoch != s.next_epoch) {
    out.outcome = SessionOutcome::kInvalidEpoch;
    return out;
  }
  s.next_epoch = NextShareSessionEpoch(epoch);
  s.last_used_ms = now_ms_();
  return out;
}

SessionUpdate ShareSessionCache::OnFetch(const std::string& group, const std::string& member,
                                         int32_t epoch,
                                         const std::vector<TopicIdPartition>& added,
                                         const std::vector<TopicIdPartition>& forgotten) {
  std::lock_guard<std::mutex> lock(mu_);
  Key key{group, member};
  SessionUpdate out;
  if (epoch == 0) {
    const int64_t now = now_ms_();
    if (!sessions_.count(key) && static_cast<int64_t>(sessions_.size()) >= max_sessions_) {
      std::erase_if(sessions_, [&](const auto& kv) { return now - kv.second.last_used_ms >= idle_ms_; });
      if (static_cast<int64_t>(sessions_.size()) >= max_sessions_) {
        out.outcome = SessionOutcome::kLimitReached;
        return out;
      }
    }
    Session& s = sessions_[key];  // a new session replaces the member's earlier one
    s = Session{};
    s.last_used_ms = now;
    s.partitions.insert(added.begin(), added.end());
    out.partitions.assign(s.partitions.begin(), s.partitions.end());
    return out;
  }
  if (epoch < -1) {
    out.outcome = SessionOutcome::kInvalidEpoch;
    return out;
  }
  std::map<Key, Session>::iterator it;
  out = Step(key, epoch, &it);
  if (out.outcome != SessionOutcome::kOk || epoch == -1) return out;
  Session& s = it->second;
  for (const TopicIdPartition& tp : forgotten) s.partitions.erase(tp);
  s.partitions.insert(added.begin(), added.end());
  out.partitions.assign(s.partitions.begin(), s.partitions.end());
  return out;
}

SessionUpdate ShareSessionCache::OnAcknowledge(const std::string& group,
                                               const std::string& member, int32_t epoch) {
  std::lock_guard<std::mutex> lock(mu_);
  if (epoch == 0 || epoch < -1) return SessionUpdate{SessionOutcome::kInvalidEpoch, {}};
  std::map<Key, Session>::iterator it;
  SessionUpdate out = Step(Key{group, member}, epoch, &it);
  if (out.outcome == SessionOutcome::kOk && epoch != -1) {
    out.partitions.assign(it->second.partitions.begin(), it->second.partitions.end());
  }
  return out;
}

bool ShareSessionCache::Remove(const std::string& group, const std::string& member) {
  std::lock_guard<std::mutex> lock(mu_);
  return sessions_.erase(Key{group, member}) > 0;
}

bool ShareSessionCache::Contains(const std::string& group, const std::string& member) const {
  std::lock_guard<std::mutex> lock(mu_);
  return sessions_.count(Key{group, member}) > 0;
}

size_t ShareSessionCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sessions_.size();
}

}  // namespace headrace::broker::share
