// The classic rebalance state machine: joins, rebalance completion, member
// removal. Every function here REQUIRES the coordinator's mutex and only
// queues callbacks into `done` (run after unlocking).
#include <algorithm>

#include "broker/coordinator/group/group_coordinator.h"
#include "common/uuid.h"
#include "common/logging.h"

namespace headrace::broker::group {
namespace {

std::string NewMemberId(const JoinRequest& req) {
  const std::string& prefix = req.instance_id ? *req.instance_id : req.client_id;
  return prefix + "-" + Uuid::Random().ToHex();
}

void Reply(GroupCoordinator::Done& done, JoinCallback cb, JoinResult r) {
  if (cb) done.push_back([cb = std::move(cb), r = std::move(r)]() mutable { cb(std::move(r)); });
}
void ReplySync(GroupCoordinator::Done& done, SyncCallback cb, SyncResult r) {
  if (cb) done.push_back([cb = std::move(cb), r = std::move(r)]() mutable { cb(std::move(r)); });
}

JoinResult JoinError(KafkaError e, std::string member_id = "") {
  JoinResult r;
  r.error = e;
  r.member_id = std::move(member_id);
  return r;
}

}  // namespace

Group& GroupCoordinator::GetOrCreate(const std::string& group_id) {
  auto [it, inserted] = groups_.try_emplace(group_id);
  if (inserted) {
    it->second.id = group_id;
    it->second.state_time_ms = Now();
  }
  return it->second;
}

void GroupCoordinator::SetState(Group& g, GroupState s, int64_t now) {
  g.state = s;
  g.state_time_ms = now;
}

KafkaError GroupCoordinator::CheckMember(Group& g, const std::string& member_id,
                                         const std::optional<std::string>& instance_id) {
  if (instance_id) {
    auto it = g.static_members.find(*instance_id);
    if (it != g.static_members.end() && it->second != member_id)
      return KafkaError::kFencedInstanceId;
  }
  if (!g.FindMember(member_id)) return KafkaError::kUnknownMemberId;
  return KafkaError::kNone;
}

// A JoinGroup with an empty member id.
void GroupCoordinator::JoinNew(Group& g, JoinRequest& req, JoinCallback cb, int64_t now,
                               Done& done) {
  if (req.instance_id) {
    auto it = g.static_members.find(*req.instance_id);
    if (it != g.static_members.end() && g.FindMember(it->second))
      return JoinStaticKnown(g, it->second, req, std::move(cb), now, done);
  }
  std::string id = NewMemberId(req);
  if (!req.instance_id && req.require_known_member_id) {
    // KIP-394: hand out the id; the member joins again with it.
    g.pending_members[id] = now + req.session_timeout_ms;
    return Reply(done, std::move(cb), JoinError(KafkaError::kMemberIdRequired, id));
  }
  AddMember(g, id, req, std::move(cb), now, done);
}

// A static member (known group.instance.id) joining with an empty member id:
// it replaces its previous incarnation under a new member id. In a Stable
// group with unchanged protocols it gets the current generation back without
// a rebalance.
void GroupCoordinator::JoinStaticKnown(Group& g, const std::string& old_id, JoinRequest& req,
                                       JoinCallback cb, int64_t now, Done& done) {
  Member old = std::move(g.members.at(old_id));
  g.members.erase(old_id);
  Reply(done, std::move(old.awaiting_join), JoinError(KafkaError::kFencedInstanceId, old_id));
  if (old.awaiting_sync) {
    SyncResult fenced;
    fenced.error = KafkaError::kFencedInstanceId;
    ReplySync(done, std::move(old.awaiting_sync), fenced);
  }
  std::string id = NewMemberId(req);
  bool unchanged = old.protocol_type == req.protocol_type && old.protocols == req.protocols;
  Member& m = g.members[id];
  m = std::move(old);
  m.awaiting_join = nullptr;  // answered above
  m.awaiting_sync = nullptr;
  m.member_id = id;
  g.static_members[*req.instance_id] = id;
  if (g.leader == old_id) g.leader = id;
  UpdateMember(m, req, now);
  if (g.Is(GroupState::kStable) && unchanged) {
    JoinResult r = CurrentJoinResult(g, m);
    r.skip_assignment = (id == g.leader);  // v9: the leader need not reassign
    Status st = PersistGroup(g);
    if (!st.ok()) { HR_LOG(kWarn) << "group " << g.id << ": persisting static rejoin: " << st.ToString(); }
    return Reply(done, std::move(cb), std::move(r));
  }
  m.awaiting_join = std::move(cb);
  if (g.Is(GroupState::kPreparingRebalance)) return MaybeCompleteJoin(g, now, done);
  PrepareRebalance(g, now, done);
}

// A JoinGroup naming a member of the group.
void GroupCoordinator::JoinExisting(Group& g, Member& m, JoinRequest& req, JoinCallback cb,
                                    int64_t now, Done& done) {
  bool unchanged = m.protocol_type == req.protocol_type && m.protocols == req.protocols;
  switch (g.state) {
    case GroupState::kPreparingRebalance:
      UpdateMember(m, req, now);
      if (m.awaiting_join) Reply(done, std::move(m.awaiting_join), JoinError(KafkaError::kRebalanceInProgress, m.member_id));
      m.awaiting_join = std::move(cb);
      return MaybeCompleteJoin(g, now, done);
    case GroupState::kCompletingRebalance:
      if (unchanged) return Reply(done, std::move(cb), CurrentJoinResult(g, m));
      break;
    case GroupState::kStable:
      if (unchanged && m.member_id != g.leader)
        return Reply(done, std::move(cb), CurrentJoinResult(g, m));
      break;
    default:
      return Reply(done, std::move(cb), JoinError(KafkaError::kUnknownMemberId, m.member_id));
  }
  UpdateMember(m, req, now);
  m.awaiting_join = std::move(cb);
  PrepareRebalance(g, now, done);
}

void GroupCoordinator::AddMember(Group& g, const std::string& member_id, JoinRequest& req,
                                 JoinCallback cb, int64_t now, Done& done) {
  g.pending_members.erase(member_id);
  Member& m = g.members[member_id];
  m.member_id = member_id;
  m.instance_id = req.instance_id;
  UpdateMember(m, req, now);
  m.awaiting_join = std::move(cb);
  if (req.instance_id) g.static_members[*req.instance_id] = member_id;
  if (g.protocol_type.empty() || g.members.size() == 1) g.protocol_type = req.protocol_type;
  if (g.Is(GroupState::kPreparingRebalance)) return MaybeCompleteJoin(g, now, done);
  PrepareRebalance(g, now, done);
}

void GroupCoordinator::UpdateMember(Member& m, JoinRequest& req, int64_t now) {
  m.client_id = req.client_id;
  m.client_host = req.client_host;
  m.session_timeout_ms = req.session_timeout_ms;
  m.rebalance_timeout_ms = req.rebalance_timeout_ms;
  m.protocol_type = req.protocol_type;
  m.protocols = req.protocols;
  m.session_deadline_ms = now + req.session_timeout_ms;
}

void GroupCoordinator::PrepareRebalance(Group& g, int64_t now, Done& done) {
  for (auto& [id, m] : g.members) {
    if (!m.awaiting_sync) continue;
    SyncResult r;
    r.error = KafkaError::kRebalanceInProgress;
    ReplySync(done, std::move(m.awaiting_sync), r);
    m.awaiting_sync = nullptr;
  }
  HR_LOG(kDebug) << "group " << g.id << ": preparing rebalance from " << GroupStateName(g.state)
                 << " generation " << g.generation << ", " << g.members.size() << " members";
  bool was_empty = g.Is(GroupState::kEmpty);
  int32_t timeout = 0;
  for (const auto& [id, m] : g.members) timeout = std::max(timeout, m.rebalance_timeout_ms);
  SetState(g, GroupState::kPreparingRebalance, now);
  g.rebalance_deadline_ms = now + timeout;
  g.initial_delay_until_ms =
      was_empty ? now + std::min(config_.initial_rebalance_delay_ms, timeout) : 0;
  MaybeCompleteJoin(g, now, done);
}

void GroupCoordinator::MaybeCompleteJoin(Group& g, int64_t now, Done& done) {
  if (!g.Is(GroupState::kPreparingRebalance)) return;
  bool all_joined = g.pending_members.empty() &&
                    std::all_of(g.members.begin(), g.members.end(),
                                [](const auto& kv) { return bool(kv.second.awaiting_join); });
  if (now < g.initial_delay_until_ms && now < g.rebalance_deadline_ms) return;
  if (all_joined || now >= g.rebalance_deadline_ms) CompleteJoin(g, now, done);
}

// Ends the join phase: members that did not rejoin are removed, the
// generation advances, and every joined member gets its JoinGroup response.
void GroupCoordinator::CompleteJoin(Group& g, int64_t now, Done& done) {
  for (auto it = g.members.begin(); it != g.members.end();) {
    if (it->second.awaiting_join) {
      ++it;
      continue;
    }
    if (it->second.instance_id) g.static_members.erase(*it->second.instance_id);
    it = g.members.erase(it);
  }
  g.pending_members.clear();
  ++g.generation;
  if (g.members.empty()) {
    SetState(g, GroupState::kEmpty, now);
    g.protocol.reset();
    g.leader.clear();
    Status st = PersistGroup(g);
    if (!st.ok()) { HR_LOG(kWarn) << "group " << g.id << ": persisting: " << st.ToString(); }
    return;
  }
  g.protocol = g.SelectProtocol();
  if (!g.FindMember(g.leader)) g.leader = g.members.begin()->first;
  {
    std::string members;
    for (const auto& [id, m] : g.members) {
      if (!members.empty()) members += ',';
      members += id;
    }
    HR_LOG_TO(kInfo, "headrace.group")
            .With("event", "group_rebalanced").With("group", g.id)
            .With("generation", g.generation).With("members", members)
            .With("member_count", g.members.size()).With("leader", g.leader)
            .With("protocol", g.protocol.value_or(""))
        << "group " << g.id << ": rebalanced to generation " << g.generation << " with "
        << g.members.size() << " member(s) [" << members << "], leader " << g.leader;
  }
  SetState(g, GroupState::kCompletingRebalance, now);
  for (auto& [id, m] : g.members) {
    m.assignment.clear();
    m.session_deadline_ms = now + m.session_timeout_ms;
    JoinCallback cb = std::move(m.awaiting_join);
    m.awaiting_join = nullptr;
    Reply(done, std::move(cb), CurrentJoinResult(g, m));
  }
}

JoinResult GroupCoordinator::CurrentJoinResult(const Group& g, const Member& m) const {
  JoinResult r;
  r.generation = g.generation;
  r.protocol_type = g.protocol_type;
  r.protocol_name = g.protocol;
  r.leader = g.leader;
  r.member_id = m.member_id;
  if (m.member_id == g.leader)
    for (const auto& [id, other] : g.members)
      r.members.push_back(JoinedMember{id, other.instance_id, other.MetadataFor(g.protocol)});
  return r;
}

void GroupCoordinator::RemoveMember(Group& g, const std::string& member_id, KafkaError why,
                                    int64_t now, Done& done) {
  auto it = g.members.find(member_id);
  if (it == g.members.end()) return;
  Member& m = it->second;
  Reply(done, std::move(m.awaiting_join), JoinError(why, member_id));
  if (m.awaiting_sync) {
    SyncResult r;
    r.error = why;
    ReplySync(done, std::move(m.awaiting_sync), r);
  }
  if (m.instance_id) g.static_members.erase(*m.instance_id);
  g.members.erase(it);
  switch (g.state) {
    case GroupState::kStable:
    case GroupState::kCompletingRebalance:
      return PrepareRebalance(g, now, done);
    case GroupState::kPreparingRebalance:
      return MaybeCompleteJoin(g, now, done);
    default:
      return;
  }
}

// Members whose session ran out (and that are not parked in a JoinGroup or
// SyncGroup) leave; so do KIP-394 pending ids that never came back.
void GroupCoordinator::ExpireSessions(Group& g, int64_t now, Done& done) {
  std::vector<std::string> expired;
  for (const auto& [id, m] : g.members)
    if (!m.awaiting_join && !m.awaiting_sync && now >= m.session_deadline_ms)
      expired.push_back(id);
  for (const std::string& id : expired) {
    HR_LOG(kInfo) << "group " << g.id << ": member " << id << " session expired";
    RemoveMember(g, id, KafkaError::kUnknownMemberId, now, done);
  }
  bool pending_expired = false;
  for (auto it = g.pending_members.begin(); it != g.pending_members.end();) {
    if (now >= it->second) {
      it = g.pending_members.erase(it);
      pending_expired = true;
    } else {
      ++it;
    }
  }
  if (pending_expired || g.Is(GroupState::kPreparingRebalance)) MaybeCompleteJoin(g, now, done);
}

}  // namespace headrace::broker::group
