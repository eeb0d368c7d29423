// KIP-932 share groups in the coordinator: ShareGroupHeartbeat,
// ShareGroupDescribe and member expiry, over ShareGroup (share_group.h).
// Membership is kept in memory only: after the coordinator moves, members
// join again (the acknowledged state of the records lives in the
// share-partitions, not here). docs/share-groups.md.
#include "broker/coordinator/group/group_coordinator.h"
#include "common/logging.h"
#include "common/uuid.h"

namespace headrace::broker::group {
namespace {

ShareHeartbeatResult ShareError(KafkaError e, std::string message = "") {
  ShareHeartbeatResult r;
  r.error = e;
  r.message = std::move(message);
  return r;
}

ShareGroupConfig ShareConfigOf(const GroupConfig& c) {
  ShareGroupConfig s;
  s.heartbeat_interval_ms = c.share_heartbeat_interval_ms;
  s.session_timeout_ms = c.share_session_timeout_ms;
  s.max_size = c.share_max_size;
  return s;
}

}  // namespace

void GroupCoordinator::ExpireShareMembers(Group& g, int64_t now, Done& done) {
  for (const std::string& id : g.share->ExpireSessions(now, g.share->assigned_sizes())) {
    HR_LOG(kInfo) << "share group " << g.id << ": member " << id
                  << " removed, no heartbeat within its share.session.timeout.ms";
    if (share_member_gone_) {
      done.push_back([f = share_member_gone_, group = g.id, id] { f(group, id, true); });
    }
  }
}

ShareHeartbeatResult GroupCoordinator::ShareHeartbeat(const std::string& group_id,
                                                      const group::ShareHeartbeat& hb,
                                                      const TopicSizes& topics) {
  if (group_id.empty()) return ShareError(KafkaError::kInvalidRequest, "GroupId can't be empty.");
  Done done;
  ShareHeartbeatResult r;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stopped_ || !log_) return ShareError(KafkaError::kCoordinatorNotAvailable);
    const int64_t now = Now();
    auto it = groups_.find(group_id);
    if (it != groups_.end()) ExpireDue(it->second, now, done);
    if (it == groups_.end()) {
      if (hb.member_epoch != 0) return ShareError(KafkaError::kUnknownMemberId);
      it = groups_.try_emplace(group_id).first;
      it->second.id = group_id;
      it->second.state_time_ms = now;
      it->second.share.emplace(ShareConfigOf(config_));
    } else if (!it->second.share) {
      return ShareError(KafkaError::kGroupIdNotFound, "Group " + group_id + " is not a share group.");
    }
    const EffectiveGroupSettings settings = SettingsFor(group_id);
    it->second.share->SetTimeouts(settings.share_heartbeat_interval_ms,
                                  settings.share_session_timeout_ms);
    r = it->second.share->Heartbeat(hb, topics, now, [] { return Uuid::Random().ToBase64(); });
    if (hb.member_epoch == -1 && r.error == KafkaError::kNone && share_member_gone_) {
      done.push_back([f = share_member_gone_, group = group_id, id = hb.member_id] {
        f(group, id, false);
      });
    }
  }
  RunAll(done);
  return r;
}

ShareGroupDescription GroupCoordinator::DescribeShareGroup(const std::string& group_id) {
  ShareGroupDescription d;
  Done done;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = groups_.find(group_id);
    if (stopped_) {
      d.error = KafkaError::kCoordinatorNotAvailable;
    } else if (it == groups_.end() || !it->second.share) {
      d.error = KafkaError::kGroupIdNotFound;
      d.error_message = "Group " + group_id + " not found.";
    } else {
      ExpireDue(it->second, Now(), done);
      d.group = *it->second.share;
    }
  }
  RunAll(done);
  return d;
}

bool GroupCoordinator::ShareAssigned(const std::string& group_id, const std::string& member_id,
                                     const std::string& topic, int32_t partition) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = groups_.find(group_id);
  return it != groups_.end() && it->second.share &&
         it->second.share->Assigned(member_id, topic, partition);
}

}  // namespace headrace::broker::group
