#include "broker/fetch/fetch_session.h"

#include <algorithm>
#include <climits>
#include <utility>

namespace headrace::broker::fetch {

int32_t NextEpoch(int32_t epoch) { return epoch < INT32_MAX ? epoch + 1 : 1; }

FetchSessionCache::FetchSessionCache(int32_t max_slots, int64_t eviction_age_ms)
    : max_slots_(static_cast<size_t>(std::max(max_slots, 0))), eviction_age_ms_(eviction_age_ms) {}

std::string FetchSessionCache::Key(bool uses_topic_ids, const SessionPartition& p) {
  std::string key;
  if (uses_topic_ids) {
    key.assign(reinterpret_cast<const char*>(p.topic_id.bytes.data()), p.topic_id.bytes.size());
  } else {
    key = p.topic;
    key.push_back('\0');
  }
  key.append(reinterpret_cast<const char*>(&p.partition), sizeof(p.partition));
  return key;
}

void FetchSessionCache::Session::Reindex() {
  index.clear();
  index.reserve(parts.size());
  for (size_t i = 0; i < parts.size(); ++i) index[Key(uses_topic_ids, parts[i])] = i;
}

void FetchSessionCache::UnindexLocked(const Session& s) {
  last_used_.erase({s.last_used_ms, s.id});
  evictable_by_privileged_.erase(s.evictable_key());
  evictable_by_all_.erase(s.evictable_key());
  partitions_ -= s.cached_size;
}

void FetchSessionCache::TouchLocked(Session& s, int64_t now_ms) {
  UnindexLocked(s);
  s.last_used_ms = now_ms;
  s.cached_size = s.parts.size();
  last_used_.insert({s.last_used_ms, s.id});
  const bool old = now_ms - s.created_ms > eviction_age_ms_;
  if (!s.privileged || old) evictable_by_privileged_.insert(s.evictable_key());
  if (old) evictable_by_all_.insert(s.evictable_key());
  partitions_ += s.cached_size;
}

bool FetchSessionCache::EvictLocked(const EvictableKey& key, int64_t now_ms) {
  int32_t victim = 0;
  if (!last_used_.empty() && now_ms - last_used_.begin()->first > eviction_age_ms_) {
    victim = last_used_.begin()->second;  // stale: nobody used it for a while
  } else {
    const auto& candidates = std::get<0>(key) ? evictable_by_privileged_ : evictable_by_all_;
    if (candidates.empty() || key < *candidates.begin()) return false;
    victim = std::get<2>(*candidates.begin());
  }
  auto it = sessions_.find(victim);
  UnindexLocked(*it->second);
  sessions_.erase(it);
  ++evictions_;
  return true;
}

int32_t FetchSessionCache::NewIdLocked() {
  std::uniform_int_distribution<int32_t> dist(1, INT32_MAX);
  for (;;) {
    int32_t id = dist(rng_);
    if (!sessions_.count(id)) return id;
  }
}

int32_t FetchSessionCache::Create(bool privileged, bool uses_topic_ids,
                                  std::vector<SessionPartition> partitions, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  if (max_slots_ == 0) return 0;
  if (sessions_.size() >= max_slots_ &&
      !EvictLocked(EvictableKey{privileged, partitions.size(), 0}, now_ms)) {
    return 0;
  }
  auto s = std::make_unique<Session>();
  s->id = NewIdLocked();
  s->privileged = privileged;
  s->uses_topic_ids = uses_topic_ids;
  s->created_ms = now_ms;
  s->last_used_ms = now_ms;
  for (SessionPartition& p : partitions) {  // a partition asked for twice counts once
    if (s->index.emplace(Key(uses_topic_ids, p), s->parts.size()).second) {
      s->parts.push_back(std::move(p));
    }
  }
  s->cached_size = 0;  // not indexed yet: TouchLocked files it
  Session& ref = *s;
  sessions_.emplace(ref.id, std::move(s));
  TouchLocked(ref, now_ms);
  return ref.id;
}

bool FetchSessionCache::Remove(int32_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return false;
  UnindexLocked(*it->second);
  sessions_.erase(it);
  return true;
}

KafkaError FetchSessionCache::Update(int32_t id, int32_t epoch, bool uses_topic_ids,
                                     const std::vector<SessionPartition>& updates,
                                     const std::vector<SessionPartition>& forgotten,
                                     int64_t now_ms, std::vector<SessionPartition>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return KafkaError::kFetchSessionIdNotFound;
  Session& s = *it->second;
  if (s.uses_topic_ids != uses_topic_ids) return KafkaError::kFetchSessionTopicIdError;
  if (s.epoch != epoch) return KafkaError::kInvalidFetchSessionEpoch;
  for (const SessionPartition& u : updates) {
    auto [pos, added] = s.index.emplace(Key(s.uses_topic_ids, u), s.parts.size());
    if (added) {
      s.parts.push_back(u);
      s.parts.back().high_watermark = -1;  // never answered: listed next
      s.parts.back().last_stable_offset = -1;
      s.parts.back().answered_log_start = -1;
      continue;
    }
    SessionPartition& p = s.parts[pos->second];
    p.fetch_offset = u.fetch_offset;
    p.partition_max_bytes = u.partition_max_bytes;
    p.current_leader_epoch = u.current_leader_epoch;
    p.last_fetched_epoch = u.last_fetched_epoch;
    p.log_start_offset = u.log_start_offset;
  }
  if (!forgotten.empty()) {
    bool removed = false;
    for (const SessionPartition& f : forgotten) {
      auto pos = s.index.find(Key(s.uses_topic_ids, f));
      if (pos == s.index.end()) continue;
      s.parts[pos->second].partition = -1;  // marked; swept below
      s.index.erase(pos);
      removed = true;
    }
    if (removed) {
      std::erase_if(s.parts, [](const SessionPartition& p) { return p.partition < 0; });
      s.Reindex();
    }
  }
  s.epoch = NextEpoch(s.epoch);
  TouchLocked(s, now_ms);
  *out = s.parts;
  return KafkaError::kNone;
}

KafkaError FetchSessionCache::Answer(int32_t id, int32_t expected_epoch,
                                     const std::vector<AnsweredPartition>& answered,
                                     std::vector<bool>* listed) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return KafkaError::kFetchSessionIdNotFound;
  Session& s = *it->second;
  if (s.epoch != expected_epoch || answered.size() != s.parts.size()) {
    return KafkaError::kInvalidFetchSessionEpoch;
  }
  listed->assign(answered.size(), false);
  bool any_records = false;
  for (size_t i = 0; i < answered.size(); ++i) {
    const AnsweredPartition& a = answered[i];
    SessionPartition& p = s.parts[i];
    bool list = a.has_records || a.has_diverging_epoch || a.has_preferred_replica;
    if (a.error_code != 0) {
      list = true;
      p.high_watermark = -1;
      p.last_stable_offset = -1;
      p.answered_log_start = -1;
    } else {
      list = list || p.high_watermark != a.high_watermark ||
             p.last_stable_offset != a.last_stable_offset ||
             p.answered_log_start != a.log_start_offset;
      p.high_watermark = a.high_watermark;
      p.last_stable_offset = a.last_stable_offset;
      p.answered_log_start = a.log_start_offset;
    }
    (*listed)[i] = list;
    any_records = any_records || a.has_records;
  }
  if (any_records) {  // those with records go last, in their order
    std::vector<SessionPartition> quiet, busy;
    quiet.reserve(s.parts.size());
    for (size_t i = 0; i < s.parts.size(); ++i) {
      (answered[i].has_records ? busy : quiet).push_back(std::move(s.parts[i]));
    }
    for (SessionPartition& p : busy) quiet.push_back(std::move(p));
    s.parts = std::move(quiet);
    s.Reindex();
  }
  return KafkaError::kNone;
}

size_t FetchSessionCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sessions_.size();
}

size_t FetchSessionCache::partitions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return partitions_;
}

int32_t FetchSessionCache::EpochOf(int32_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(id);
  return it == sessions_.end() ? -1 : it->second->epoch;
}

size_t FetchSessionCache::evictions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return evictions_;
}

}  // namespace headrace::broker::fetch
