#include "broker/coordinator/group/consumer_group.h"

namespace headrace::broker::group {

const char* ConsumerMemberStateName(ConsumerMemberState s) {
  switch (s) {
    case ConsumerMemberState::kUnrevokedPartitions: return "UNREVOKED_PARTITIONS";
    case ConsumerMemberState::kUnreleasedPartitions: return "UNRELEASED_PARTITIONS";
    case ConsumerMemberState::kStable: return "STABLE";
  }
  return "UNKNOWN";
}

const char* ConsumerGroupStateName(ConsumerGroupStateKind s) {
  switch (s) {
    case ConsumerGroupStateKind::kEmpty: return "Empty";
    case ConsumerGroupStateKind::kAssigning: return "Assigning";
    case ConsumerGroupStateKind::kReconciling: return "Reconciling";
    case ConsumerGroupStateKind::kStable: return "Stable";
  }
  return "Unknown";
}

ConsumerGroupStateKind ConsumerGroup::State() const {
  if (members.empty()) return ConsumerGroupStateKind::kEmpty;
  if (group_epoch > assignment_epoch) return ConsumerGroupStateKind::kAssigning;
  for (const auto& [id, m] : members)
    if (m.state != ConsumerMemberState::kStable || m.member_epoch != assignment_epoch)
      return ConsumerGroupStateKind::kReconciling;
  return ConsumerGroupStateKind::kStable;
}

ConsumerMember* ConsumerGroup::FindMember(const std::string& id) {
  auto it = members.find(id);
  return it == members.end() ? nullptr : &it->second;
}

const ConsumerMember* ConsumerGroup::FindStatic(const std::string& instance_id) const {
  for (const auto& [id, m] : members)
    if (m.instance_id == instance_id) return &m;
  return nullptr;
}

std::set<std::string> ConsumerGroup::SubscribedTopicNames() const {
  std::set<std::string> out;
  for (const auto& [id, m] : members) out.insert(m.subscribed_topics.begin(), m.subscribed_topics.end());
  return out;
}

std::set<std::string> ConsumerGroup::SubscribedRegexes() const {
  std::set<std::string> out;
  for (const auto& [id, m] : members)
    if (m.subscribed_regex) out.insert(*m.subscribed_regex);
  return out;
}

bool ConsumerGroup::HeldByOther(const std::string& except, const std::string& topic,
                                int32_t partition) const {
  auto holds = [&](const TopicPartitions& tps) {
    auto it = tps.find(topic);
    return it != tps.end() && it->second.count(partition) > 0;
  };
  for (const auto& [id, m] : members)
    if (id != except && (holds(m.assigned) || holds(m.pending_revocation))) return true;
  return false;
}

namespace {

bool Intersects(const TopicPartitions& a, const TopicPartitions& b) {
  for (const auto& [topic, parts] : a) {
    auto it = b.find(topic);
    if (it == b.end()) continue;
    for (int32_t p : parts)
      if (it->second.count(p)) return true;
  }
  return false;
}

void Prune(TopicPartitions& tps) {
  for (auto it = tps.begin(); it != tps.end();) it = it->second.empty() ? tps.erase(it) : std::next(it);
}

}  // namespace

bool ReconcileMember(ConsumerMember& m, int32_t target_epoch, const TopicPartitions& target,
                     const std::optional<TopicPartitions>& owned,
                     const std::function<bool(const std::string&, int32_t)>& held_by_other) {
  const ConsumerMember before = m;
  if (m.state == ConsumerMemberState::kUnrevokedPartitions) {
    if (!owned || Intersects(*owned, m.pending_revocation)) return false;
    m.pending_revocation.clear();
    m.revocation_deadline_ms = 0;
  }
  TopicPartitions keep, revoke;
  for (const auto& [topic, parts] : m.assigned) {
    auto t = target.find(topic);
    for (int32_t p : parts) {
      if (t != target.end() && t->second.count(p)) keep[topic].insert(p);
      else revoke[topic].insert(p);
    }
  }
  if (!revoke.empty()) {
    m.assigned = std::move(keep);
    m.pending_revocation = std::move(revoke);
    m.state = ConsumerMemberState::kUnrevokedPartitions;
  } else {
    bool waiting = false;
    for (const auto& [topic, parts] : target)
      for (int32_t p : parts) {
        auto& have = keep[topic];
        if (have.count(p)) continue;
        if (held_by_other(topic, p)) waiting = true;
        else have.insert(p);
      }
    Prune(keep);
    m.assigned = std::move(keep);
    if (m.member_epoch != target_epoch) {
      m.previous_member_epoch = m.member_epoch;
      m.member_epoch = target_epoch;
    }
    m.state = waiting ? ConsumerMemberState::kUnreleasedPartitions : ConsumerMemberState::kStable;
  }
  return m.assigned != before.assigned || m.pending_revocation != before.pending_revocation ||
         m.member_epoch != before.member_epoch || m.state != before.state;
}

}  // namespace headrace::broker::group
