#include "broker/coordinator/group/consumer_assignors.h"

#include <algorithm>
#include <set>

namespace headrace::broker::group {
namespace {


bool Subscribes(const AssignorMember& m, const std::string& topic) {
  return std::binary_search(m.subscribed_topics.begin(), m.subscribed_topics.end(), topic);
}

// Members sorted by member id (the callers' input order does not matter).
std::vector<const AssignorMember*> Sorted(const std::vector<AssignorMember>& members) {
  std::vector<const AssignorMember*> out;
  for (const AssignorMember& m : members) out.push_back(&m);
  std::sort(out.begin(), out.end(),
            [](const AssignorMember* a, const AssignorMember* b) { return a->member_id < b->member_id; });
  return out;
}

}  // namespace

std::map<std::string, TopicPartitions> AssignUniform(const std::vector<AssignorMember>& members,
                                                     const AssignorTopics& topics) {
  std::map<std::string, TopicPartitions> out;
  std::map<std::string, size_t> count;
  std::vector<const AssignorMember*> sorted = Sorted(members);
  for (const AssignorMember* m : sorted) {
    out[m->member_id];
    count[m->member_id] = 0;
  }
  // 1. Stickiness: keep what each member's previous target still allows.
  std::set<std::pair<std::string, int32_t>> taken;
  for (const AssignorMember* m : sorted)
    for (const auto& [topic, parts] : m->previous_target) {
      auto t = topics.find(topic);
      if (t == topics.end() || !Subscribes(*m, topic)) continue;
      for (int32_t p : parts)
        if (p < t->second && taken.emplace(topic, p).second) {
          out[m->member_id][topic].insert(p);
          ++count[m->member_id];
        }
    }
  // 2. Every other partition goes to the least loaded member subscribed to it.
  for (const auto& [topic, n] : topics)
    for (int32_t p = 0; p < n; ++p) {
      if (taken.count({topic, p})) continue;
      const AssignorMember* best = nullptr;
      for (const AssignorMember* m : sorted)
        if (Subscribes(*m, topic) && (!best || count[m->member_id] < count[best->member_id]))
          best = m;
      if (!best) continue;
      out[best->member_id][topic].insert(p);
      ++count[best->member_id];
    }
  // 3. Balance: move one partition at a time from a member to one that has
  // at least two fewer and may take it. Each move lowers the sum of squared
  // counts, so this ends.
  std::vector<const AssignorMember*> by_load;
  for (bool moved = true; moved;) {
    moved = false;
    by_load.assign(sorted.begin(), sorted.end());
    std::stable_sort(by_load.begin(), by_load.end(), [&](const AssignorMember* a, const AssignorMember* b) {
      return count[a->member_id] > count[b->member_id];
    });
    for (auto from = by_load.begin(); from != by_load.end() && !moved; ++from)
      for (auto to = by_load.rbegin(); to != by_load.rend() && !moved; ++to) {
        if (count[(*to)->member_id] + 1 >= count[(*from)->member_id]) break;
        TopicPartitions& src = out[(*from)->member_id];
        for (auto t = src.rbegin(); t != src.rend() && !moved; ++t) {
          if (t->second.empty() || !Subscribes(**to, t->first)) continue;
          int32_t p = *t->second.rbegin();
          std::string topic = t->first;
          src[topic].erase(p);
          if (src[topic].empty()) src.erase(topic);
          out[(*to)->member_id][topic].insert(p);
          --count[(*from)->member_id];
          ++count[(*to)->member_id];
          moved = true;
        }
      }
  }
  for (auto& [id, tps] : out) std::erase_if(tps, [](const auto& tp) { return tp.second.empty(); });
  return out;
}

std::map<std::string, TopicPartitions> AssignRange(const std::vector<AssignorMember>& members,
                                                   const AssignorTopics& topics) {
  std::map<std::string, TopicPartitions> out;
  std::vector<const AssignorMember*> order;
  for (const AssignorMember& m : members) {
    out[m.member_id];
    order.push_back(&m);
  }
  // Static members sort by instance id so that a restarted instance (a new
  // member id) gets the same range back.
  std::sort(order.begin(), order.end(), [](const AssignorMember* a, const AssignorMember* b) {
    const std::string& ka = a->instance_id ? *a->instance_id : a->member_id;
    const std::string& kb = b->instance_id ? *b->instance_id : b->member_id;
    return ka != kb ? ka < kb : a->member_id < b->member_id;
  });
  for (const auto& [topic, n] : topics) {
    std::vector<const AssignorMember*> subs;
    for (const AssignorMember* m : order)
      if (Subscribes(*m, topic)) subs.push_back(m);
    if (subs.empty()) continue;
    const int32_t each = n / static_cast<int32_t>(subs.size());
    const int32_t extra = n % static_cast<int32_t>(subs.size());
    int32_t next = 0;
    for (int32_t i = 0; i < static_cast<int32_t>(subs.size()); ++i) {
      int32_t len = each + (i < extra ? 1 : 0);
      for (int32_t p = next; p < next + len; ++p) out[subs[i]->member_id][topic].insert(p);
      next += len;
    }
  }
  return out;
}

std::optional<std::string> AssignorShortName(const std::string& name) {
  if (name == "uniform" || name == "org.apache.kafka.coordinator.group.assignor.UniformAssignor" ||
      name == "org.apache.kafka.coordinator.group.api.assignor.UniformAssignor")
    return std::string("uniform");
  if (name == "range" || name == "org.apache.kafka.coordinator.group.assignor.RangeAssignor" ||
      name == "org.apache.kafka.coordinator.group.api.assignor.RangeAssignor")
    return std::string("range");
  return std::nullopt;
}

std::map<std::string, TopicPartitions> RunAssignor(const std::string& name,
                                                   const std::vector<AssignorMember>& members,
                                                   const AssignorTopics& topics) {
  return name == "range" ? AssignRange(members, topics) : AssignUniform(members, topics);
}

}  // namespace headrace::broker::group
