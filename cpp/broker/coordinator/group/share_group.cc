#include "broker/coordinator/group/share_group.h"

#include <algorithm>

namespace headrace::broker::group {

std::map<std::string, SharePartitions> AssignShare(
    const std::map<std::string, std::vector<std::string>>& subscriptions, const TopicSizes& topics) {
  std::map<std::string, SharePartitions> out;
  for (const auto& [topic, partitions] : topics) {
    if (partitions <= 0) continue;
    std::vector<const std::string*> members;  // in member-id order (the map's)
    for (const auto& [id, subscribed] : subscriptions) {
      if (std::binary_search(subscribed.begin(), subscribed.end(), topic)) members.push_back(&id);
    }
    const int64_t m = static_cast<int64_t>(members.size());
    if (m == 0) continue;
    if (m <= partitions) {
      for (int32_t p = 0; p < partitions; ++p) out[*members[p % m]][topic].insert(p);
    } else {
      for (int64_t i = 0; i < m; ++i) out[*members[i]][topic].insert(static_cast<int32_t>(i % partitions));
    }
  }
  return out;
}

ShareHeartbeatResult ShareGroup::Heartbeat(const ShareHeartbeat& hb, const TopicSizes& topics,
                                           int64_t now_ms,
                                           const std::function<std::string()>& new_member_id) {
  ShareHeartbeatResult r;
  r.heartbeat_interval_ms = config_.heartbeat_interval_ms;
  auto fail = [&](KafkaError e, std::string message) {
    r.error = e;
    r.message = std::move(message);
    return r;
  };
  if (hb.member_epoch < -1) return fail(KafkaError::kInvalidRequest, "member epoch below -1");
  if (hb.member_epoch == -1) {
    if (members_.erase(hb.member_id) == 0) {
      return fail(KafkaError::kUnknownMemberId, "member " + hb.member_id + " is not in the group");
    }
    ++group_epoch_;
    Reassign(topics);
    r.member_id = hb.member_id;
    r.member_epoch = -1;
    return r;
  }

  bool changed = false;
  ShareMember* m = nullptr;
  if (hb.member_epoch == 0) {
    std::string id = hb.member_id.empty() ? new_member_id() : hb.member_id;
    auto it = members_.find(id);
    if (it == members_.end()) {
      if (!hb.subscribed_topics) {
        return fail(KafkaError::kInvalidRequest, "a joining member must name its subscribed topics");
      }
      if (static_cast<int32_t>(members_.size()) >= config_.max_size) {
        return fail(KafkaError::kGroupMaxSizeReached,
                    "the group has " + std::to_string(members_.size()) +
                        " members, group.share.max.size");
      }
      it = members_.emplace(id, ShareMember{}).first;
      it->second.member_id = id;
      changed = true;
    }
    m = &it->second;
    m->assignment_sent = false;  // a (re)joining member learns its assignment
  } else {
    auto it = members_.find(hb.member_id);
    if (it == members_.end()) {
      return fail(KafkaError::kUnknownMemberId, "member " + hb.member_id + " is not in the group");
    }
    m = &it->second;
    if (m->member_epoch != hb.member_epoch) {
      return fail(KafkaError::kFencedMemberEpoch,
                  "member epoch " + std::to_string(hb.member_epoch) + ", the member's is " +
                      std::to_string(m->member_epoch));
    }
  }

  if (hb.subscribed_topics) {
    std::vector<std::string> subs = *hb.subscribed_topics;
    std::sort(subs.begin(), subs.end());
    subs.erase(std::unique(subs.begin(), subs.end()), subs.end());
    topics_subscribed_.insert(subs.begin(), subs.end());
    if (subs != m->subscribed_topics) {
      m->subscribed_topics = std::move(subs);
      changed = true;
    }
  }
  if (hb.rack_id) m->rack_id = hb.rack_id;
  m->client_id = hb.client_id;
  m->client_host = hb.client_host;
  m->session_deadline_ms = now_ms + config_.session_timeout_ms;
  if (changed) ++group_epoch_;
  Reassign(topics);

  m->member_epoch = group_epoch_;
  r.member_id = m->member_id;
  r.member_epoch = m->member_epoch;
  if (!m->assignment_sent) {
    r.assignment = m->assigned;
    m->assignment_sent = true;
  }
  return r;
}

std::vector<std::string> ShareGroup::ExpireSessions(int64_t now_ms, const TopicSizes& topics) {
  std::vector<std::string> gone;
  for (auto it = members_.begin(); it != members_.end();) {
    if (it->second.session_deadline_ms <= now_ms) {
      gone.push_back(it->first);
      it = members_.erase(it);
    } else {
      ++it;
    }
  }
  if (!gone.empty()) {
    ++group_epoch_;
    Reassign(topics);
  }
  return gone;
}

bool ShareGroup::Assigned(const std::string& member_id, const std::string& topic,
                          int32_t partition) const {
  auto m = members_.find(member_id);
  if (m == members_.end()) return false;
  auto t = m->second.assigned.find(topic);
  return t != m->second.assigned.end() && t->second.count(partition) > 0;
}

TopicSizes ShareGroup::SubscribedSizes(const TopicSizes& topics) const {
  TopicSizes out;
  for (const auto& [id, m] : members_) {
    for (const std::string& t : m.subscribed_topics) {
      auto it = topics.find(t);
      if (it != topics.end()) out[t] = it->second;
    }
  }
  return out;
}

void ShareGroup::Reassign(const TopicSizes& topics) {
  TopicSizes sizes = SubscribedSizes(topics);
  if (assignment_epoch_ == group_epoch_ && sizes == assigned_sizes_) return;
  if (assignment_epoch_ == group_epoch_) ++group_epoch_;  // the metadata changed
  std::map<std::string, std::vector<std::string>> subscriptions;
  for (const auto& [id, m] : members_) subscriptions[id] = m.subscribed_topics;
  std::map<std::string, SharePartitions> target = AssignShare(subscriptions, sizes);
  for (auto& [id, m] : members_) {
    auto t = target.find(id);
    SharePartitions next = t == target.end() ? SharePartitions{} : std::move(t->second);
    if (next != m.assigned) {
      m.assigned = std::move(next);
      m.assignment_sent = false;
    }
  }
  assignment_epoch_ = group_epoch_;
  assigned_sizes_ = std::move(sizes);
}

}  // namespace headrace::broker::group
