#include "broker/coordinator/group/group.h"

#include <algorithm>
#include <set>

namespace headrace::broker::group {

const char* GroupStateName(GroupState s) {
  switch (s) {
    case GroupState::kEmpty: return "Empty";
    case GroupState::kPreparingRebalance: return "PreparingRebalance";
    case GroupState::kCompletingRebalance: return "CompletingRebalance";
    case GroupState::kStable: return "Stable";
    case GroupState::kDead: return "Dead";
  }
  return "Unknown";
}

const std::string& Member::MetadataFor(const std::optional<std::string>& protocol) const {
  static const std::string kEmpty;
  if (!protocol) return kEmpty;
  for (const Protocol& p : protocols)
    if (p.name == *protocol) return p.metadata;
  return kEmpty;
}

bool Member::Supports(const std::string& protocol) const {
  return std::any_of(protocols.begin(), protocols.end(),
                     [&](const Protocol& p) { return p.name == protocol; });
}

Member* Group::FindMember(const std::string& member_id) {
  auto it = members.find(member_id);
  return it == members.end() ? nullptr : &it->second;
}

bool SameCommit(const CommittedOffset& a, const CommittedOffset& b) {
  return a.offset == b.offset && a.leader_epoch == b.leader_epoch && a.metadata == b.metadata &&
         a.commit_time_ms == b.commit_time_ms;
}

bool Group::HasPendingTxnOffset(const TopicPartitionKey& tp) const {
  return std::any_of(pending_txn_offsets.begin(), pending_txn_offsets.end(),
                     [&](const auto& p) { return p.second.offsets.count(tp) > 0; });
}

std::optional<std::string> Group::SelectProtocol() const {
  if (members.empty()) return std::nullopt;
  std::map<std::string, int> votes;  // candidates: supported by every member
  for (const Protocol& p : members.begin()->second.protocols) {
    bool all = std::all_of(members.begin(), members.end(),
                           [&](const auto& kv) { return kv.second.Supports(p.name); });
    if (all) votes[p.name] = 0;
  }
  if (votes.empty()) return std::nullopt;
  for (const auto& [id, m] : members) {
    for (const Protocol& p : m.protocols) {
      auto it = votes.find(p.name);
      if (it != votes.end()) {
        ++it->second;
        break;
      }
    }
  }
  // Most votes wins; ties go to the alphabetically first name (deterministic).
  auto best = std::max_element(votes.begin(), votes.end(), [](const auto& a, const auto& b) {
    return a.second < b.second;
  });
  return best->first;
}

bool Group::AcceptsProtocols(const std::string& type, const std::vector<Protocol>& protos) const {
  if (type.empty() || protos.empty()) return false;
  if (members.empty()) return true;
  if (type != protocol_type) return false;
  for (const Protocol& p : protos) {
    bool all = std::all_of(members.begin(), members.end(),
                           [&](const auto& kv) { return kv.second.Supports(p.name); });
    if (all) return true;
  }
  return false;
}

namespace {

// Appends the topic names of one ConsumerProtocolSubscription; ignores a
// malformed one (the coordinator does not need to understand it).
void ParseSubscription(const std::string& b, std::set<std::string>* out) {
  auto rd = [&](size_t pos, int n) -> int64_t {
    int64_t v = 0;
    for (int i = 0; i < n; ++i) v = (v << 8) | static_cast<uint8_t>(b[pos + i]);
    return v;
  };
  if (b.size() < 6) return;
  size_t pos = 2;  // int16 version
  int32_t count = static_cast<int32_t>(rd(pos, 4));
  pos += 4;
  for (int32_t i = 0; i < count; ++i) {
    if (b.size() - pos < 2) return;
    int16_t len = static_cast<int16_t>(rd(pos, 2));
    pos += 2;
    if (len < 0 || b.size() - pos < static_cast<size_t>(len)) return;
    out->insert(b.substr(pos, static_cast<size_t>(len)));
    pos += static_cast<size_t>(len);
  }
}

}  // namespace

std::vector<std::string> Group::SubscribedTopics() const {
  std::set<std::string> topics;
  if (protocol_type == "consumer")
    for (const auto& [id, m] : members) ParseSubscription(m.MetadataFor(protocol), &topics);
  return {topics.begin(), topics.end()};
}

}  // namespace headrace::broker::group
