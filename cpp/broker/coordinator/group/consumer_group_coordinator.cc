// KIP-848 consumer groups in the coordinator: ConsumerGroupHeartbeat,
// ConsumerGroupDescribe, member expiry, replay of their records and the
// conversion of empty groups between the two protocols. Every private
// function here REQUIRES the coordinator's mutex.
#include <algorithm>
#include <regex>

#include "broker/coordinator/group/consumer_assignors.h"
#include "broker/coordinator/group/consumer_group_records.h"
#include "broker/coordinator/group/group_coordinator.h"
#include "broker/coordinator/group/group_log_entries.h"
#include "common/logging.h"

namespace headrace::broker::group {
namespace {

ConsumerHeartbeatResult HbError(KafkaError e, std::string message = "") {
  ConsumerHeartbeatResult r;
  r.error = e;
  if (!message.empty()) r.error_message = std::move(message);
  return r;
}

// The request's owned partitions by topic name (ids the group does not know
// are dropped: the member cannot own what was never assigned).
TopicPartitions OwnedByName(const IdPartitions& owned, const ConsumerGroup& cg) {
  TopicPartitions out;
  for (const auto& [id, parts] : owned)
    for (const auto& [name, t] : cg.topics)
      if (t.id == id) out[name].insert(parts.begin(), parts.end());
  return out;
}

IdPartitions ToIds(const TopicPartitions& tps, const ConsumerGroup& cg) {
  IdPartitions out;
  for (const auto& [name, parts] : tps) {
    auto t = cg.topics.find(name);
    if (t == cg.topics.end() || parts.empty()) continue;
    out.emplace_back(t->second.id, std::vector<int32_t>(parts.begin(), parts.end()));
  }
  return out;
}

bool IsSubset(const TopicPartitions& a, const TopicPartitions& b) {
  for (const auto& [topic, parts] : a) {
    auto it = b.find(topic);
    for (int32_t p : parts)
      if (it == b.end() || !it->second.count(p)) return false;
  }
  return true;
}

// The assignor for the next target: the one most members ask for (ties:
// the configured order), else the configured default.
std::string ChooseAssignor(const ConsumerGroup& cg, const std::vector<std::string>& configured) {
  std::map<std::string, int> votes;
  for (const auto& [id, m] : cg.members)
    if (m.server_assignor) ++votes[*m.server_assignor];
  std::string best = configured.empty() ? "uniform" : configured.front();
  int best_votes = 0;
  for (const std::string& name : configured) {
    auto it = votes.find(name);
    if (it != votes.end() && it->second > best_votes) {
      best = name;
      best_votes = it->second;
    }
  }
  return best;
}

}  // namespace

void GroupCoordinator::AppendRecords(const std::string& group_id,
                                     const std::vector<GroupLog::Entry>& records) {
  if (records.empty() || !log_) return;
  // Like classic membership, not fsynced (as in Kafka): a crash costs the
  // last few epochs, which members recover from by rejoining.
  Status st = log_->Append(records);
  if (!st.ok()) {
    HR_LOG(kWarn) << "group " << group_id << ": persisting consumer group: " << st.ToString();
  }
}

void GroupCoordinator::SyncConsumerGroupState(Group& g, int64_t now) {
  GroupState s = g.consumer.members.empty() ? GroupState::kEmpty : GroupState::kStable;
  if (g.state != s) SetState(g, s, now);
}

void GroupCoordinator::ConvertToConsumerGroup(Group& g, std::vector<GroupLog::Entry>* records) {
  HR_LOG(kInfo) << "group " << g.id << ": empty classic group becomes a consumer group";
  g.is_consumer = true;
  g.protocol_type = "consumer";
  g.protocol.reset();
  g.leader.clear();
  g.generation = 0;
  g.pending_members.clear();
  g.consumer = ConsumerGroup{};
  records->push_back(ConsumerGroupMetadataEntry(g.id, 0));
}

void GroupCoordinator::ConvertToClassicGroup(Group& g, std::vector<GroupLog::Entry>* records) {
  HR_LOG(kInfo) << "group " << g.id << ": empty consumer group becomes a classic group";
  AppendConsumerGroupTombstones(g.id, g.consumer, records);
  g.is_consumer = false;
  g.consumer = ConsumerGroup{};
  g.protocol_type.clear();
}

void GroupCoordinator::AppendGroupTombstones(const Group& g, std::vector<GroupLog::Entry>* out) {
  if (g.is_consumer) AppendConsumerGroupTombstones(g.id, g.consumer, out);
  out->push_back(GroupTombstone(g.id));
}

void GroupCoordinator::RemoveConsumerMember(Group& g, const std::string& member_id, int64_t now,
                                            std::vector<GroupLog::Entry>* records) {
  ConsumerGroup& cg = g.consumer;
  if (!cg.members.erase(member_id)) return;
  cg.target.erase(member_id);
  AppendConsumerMemberTombstones(g.id, member_id, records);
  ++cg.group_epoch;
  records->push_back(ConsumerGroupMetadataEntry(g.id, cg.group_epoch));
  SyncConsumerGroupState(g, now);
}

void GroupCoordinator::ExpireConsumerMembers(Group& g, int64_t now) {
  std::vector<std::string> expired;
  for (const auto& [id, m] : g.consumer.members) {
    if (now >= m.session_deadline_ms) {
      HR_LOG(kInfo) << "group " << g.id << ": consumer member " << id << " session expired";
      expired.push_back(id);
    } else if (m.revocation_deadline_ms > 0 && now >= m.revocation_deadline_ms) {
      HR_LOG(kInfo) << "group " << g.id << ": consumer member " << id
                    << " did not revoke its partitions within its rebalance timeout";
      expired.push_back(id);
    }
  }
  if (expired.empty()) return;
  std::vector<GroupLog::Entry> records;
  for (const std::string& id : expired) RemoveConsumerMember(g, id, now, &records);
  AppendRecords(g.id, records);
}

void GroupCoordinator::ExpireDue(Group& g, int64_t now, Done& done) {
  if (g.is_consumer) return ExpireConsumerMembers(g, now);
  if (g.share) return ExpireShareMembers(g, now, done);
  ExpireSessions(g, now, done);
}

void GroupCoordinator::ExpireAllDue(int64_t now, Done& done) {
  for (auto& [id, g] : groups_) ExpireDue(g, now, done);
}

ConsumerHeartbeatResult GroupCoordinator::ConsumerHeartbeat(const ConsumerHeartbeatRequest& req,
                                                            const TopicLookup& lookup,
                                                            const TopicNames& all_topics) {
  // Request checks (Kafka's, in its order).
  if (req.group_id.empty()) return HbError(KafkaError::kInvalidRequest, "GroupId can't be empty.");
  if (req.instance_id && req.instance_id->empty())
    return HbError(KafkaError::kInvalidRequest, "InstanceId can't be empty.");
  if (req.member_epoch > 0 || req.member_epoch == -1) {
    if (req.member_id.empty()) return HbError(KafkaError::kInvalidRequest, "MemberId can't be empty.");
  } else if (req.member_epoch == 0) {
    if (req.rebalance_timeout_ms == -1)
      return HbError(KafkaError::kInvalidRequest, "RebalanceTimeoutMs must be provided in first request.");
    if (!req.owned || !req.owned->empty())
      return HbError(KafkaError::kInvalidRequest, "TopicPartitions must be empty when (re-)joining.");
    if (!req.subscribed_topic_names && !req.subscribed_topic_regex)
      return HbError(KafkaError::kInvalidRequest,
                     "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.");
  } else if (req.member_epoch == -2) {
    if (!req.instance_id) return HbError(KafkaError::kInvalidRequest, "InstanceId can't be null.");
  } else {
    return HbError(KafkaError::kInvalidRequest, "MemberEpoch is invalid.");
  }
  if (req.subscribed_topic_regex && !req.subscribed_topic_regex->empty()) {
    try {
      std::regex check(*req.subscribed_topic_regex);
    } catch (const std::regex_error&) {
      return HbError(KafkaError::kInvalidRegularExpression,
                     "SubscribedTopicRegex " + *req.subscribed_topic_regex + " is not a valid regular expression.");
    }
  }
  std::optional<std::string> assignor_pref;
  if (req.server_assignor) {
    auto name = AssignorShortName(*req.server_assignor);
    if (!name || std::find(config_.consumer_assignors.begin(), config_.consumer_assignors.end(),
                           *name) == config_.consumer_assignors.end())
      return HbError(KafkaError::kUnsupportedAssignor,
                     "ServerAssignor " + *req.server_assignor + " is not supported.");
    assignor_pref = *name;
  }

  const EffectiveGroupSettings settings = SettingsFor(req.group_id);
  Done done;  // callbacks of a classic group's expiry
  ConsumerHeartbeatResult result;
  {
    std::lock_guard<std::mutex> l(mu_);
    std::vector<GroupLog::Entry> records;
    result = [&]() -> ConsumerHeartbeatResult {
    ConsumerHeartbeatResult r;
    if (stopped_ || !log_) return HbError(KafkaError::kCoordinatorNotAvailable);
    const int64_t now = Now();
    auto it = groups_.find(req.group_id);
    if (it != groups_.end()) ExpireDue(it->second, now, done);
    if (it == groups_.end()) {
      if (req.member_epoch != 0) return HbError(KafkaError::kUnknownMemberId);
      it = groups_.try_emplace(req.group_id).first;
      it->second.id = req.group_id;
      it->second.state_time_ms = now;
      ConvertToConsumerGroup(it->second, &records);
    } else if (it->second.share) {
      return HbError(KafkaError::kGroupIdNotFound,
                     "Group " + req.group_id + " is not a consumer group.");
    } else if (!it->second.is_consumer) {
      Group& classic = it->second;
      bool empty = classic.members.empty() && classic.pending_members.empty() &&
                   classic.Is(GroupState::kEmpty);
      if (req.member_epoch != 0 || !empty)
        return HbError(KafkaError::kGroupIdNotFound,
                       "Group " + req.group_id + " is not a consumer group.");
      ConvertToConsumerGroup(classic, &records);
    }
    Group& g = it->second;
    ConsumerGroup& cg = g.consumer;
    const int32_t old_epoch = cg.group_epoch;

    // Leaving.
    if (req.member_epoch == -1 || req.member_epoch == -2) {
      ConsumerMember* m = cg.FindMember(req.member_id);
      if (!m && req.instance_id) {
        const ConsumerMember* s = cg.FindStatic(*req.instance_id);
        if (s) m = cg.FindMember(s->member_id);
      }
      if (!m) return HbError(KafkaError::kUnknownMemberId);
      if (req.instance_id && m->instance_id != req.instance_id)
        return HbError(KafkaError::kFencedInstanceId);
      r.member_id = m->member_id;
      r.member_epoch = req.member_epoch;
      r.heartbeat_interval_ms = settings.consumer_heartbeat_interval_ms;
      if (req.member_epoch == -2) {
        // A static member leaving for now keeps its assignment until its
        // session ends; the same instance rejoins in its place.
        if (m->member_epoch != -2) m->previous_member_epoch = m->member_epoch;
        m->member_epoch = -2;
        records.push_back(ConsumerGroupCurrentAssignmentEntry(g.id, *m));
      } else {
        RemoveConsumerMember(g, r.member_id, now, &records);
      }
      AppendRecords(g.id, records);
      HR_LOG(kDebug) << "group " << g.id << ": consumer member " << r.member_id << " left (epoch "
                     << req.member_epoch << ")";
    } else {
      ConsumerMember* m = nullptr;
      bool bump = false;
      if (req.member_epoch == 0) {
        std::string id = req.member_id.empty() ? Uuid::Random().ToBase64() : req.member_id;
        const ConsumerMember* prior = req.instance_id ? cg.FindStatic(*req.instance_id) : nullptr;
        if (prior && prior->member_id != id) {
          if (prior->member_epoch != -2)
            return HbError(KafkaError::kUnreleasedInstanceId,
                           "Static member " + *req.instance_id + " is still active.");
          // The instance comes back: the new member takes the old one's
          // place, assignment and epoch.
          ConsumerMember moved = *prior;
          std::string old_id = prior->member_id;
          TopicPartitions target = cg.target[old_id];
          cg.members.erase(old_id);
          cg.target.erase(old_id);
          AppendConsumerMemberTombstones(g.id, old_id, &records);
          moved.member_id = id;
          moved.member_epoch = moved.previous_member_epoch;
          m = &cg.members.emplace(id, std::move(moved)).first->second;
          cg.target[id] = std::move(target);
          records.push_back(ConsumerGroupTargetMemberEntry(g.id, id, cg.target[id]));
        } else {
          m = cg.FindMember(id);
          if (m && m->member_epoch == -2) {
            m->member_epoch = m->previous_member_epoch;  // the same static member is back
          } else if (!m) {
            if (cg.members.size() >= static_cast<size_t>(config_.consumer_max_size))
              return HbError(KafkaError::kGroupMaxSizeReached,
                             "The consumer group has reached its maximum capacity of " +
                                 std::to_string(config_.consumer_max_size) + " members.");
            m = &cg.members[id];
            m->member_id = id;
            bump = true;
          } else if (m->member_epoch != 0) {
            // A known member rejoining (it lost its state): it starts over.
            m->assigned.clear();
            m->pending_revocation.clear();
            m->member_epoch = 0;
            m->previous_member_epoch = 0;
            m->state = ConsumerMemberState::kStable;
          }
        }
      } else {
        m = cg.FindMember(req.member_id);
        if (!m) return HbError(KafkaError::kUnknownMemberId);
        if (req.instance_id && m->instance_id != req.instance_id)
          return HbError(KafkaError::kFencedInstanceId);
        if (req.member_epoch > m->member_epoch) return HbError(KafkaError::kFencedMemberEpoch);
        if (req.member_epoch < m->member_epoch) {
          // A lost response: the previous epoch with a subset of the current
          // assignment is accepted.
          if (req.member_epoch != m->previous_member_epoch || !req.owned ||
              !IsSubset(OwnedByName(*req.owned, cg), m->assigned))
            return HbError(KafkaError::kFencedMemberEpoch);
        }
      }
      // The member's subscription and settings.
      ConsumerMember before = *m;
      if (req.instance_id) m->instance_id = req.instance_id;
      if (req.rack_id) m->rack_id = req.rack_id;
      if (req.rebalance_timeout_ms != -1) m->rebalance_timeout_ms = req.rebalance_timeout_ms;
      m->client_id = req.client_id;
      m->client_host = req.client_host;
      if (req.subscribed_topic_names) {
        std::vector<std::string> topics = *req.subscribed_topic_names;
        std::sort(topics.begin(), topics.end());
        topics.erase(std::unique(topics.begin(), topics.end()), topics.end());
        if (topics != m->subscribed_topics) bump = true;
        m->subscribed_topics = std::move(topics);
      }
      if (req.subscribed_topic_regex) {
        std::optional<std::string> regex;
        if (!req.subscribed_topic_regex->empty()) regex = req.subscribed_topic_regex;
        if (regex != m->subscribed_regex) bump = true;
        m->subscribed_regex = std::move(regex);
      }
      if (req.server_assignor && assignor_pref != m->server_assignor) {
        m->server_assignor = assignor_pref;
        bump = true;
      }
      m->has_metadata = true;
      if (bump || m->instance_id != before.instance_id || m->rack_id != before.rack_id ||
          m->rebalance_timeout_ms != before.rebalance_timeout_ms ||
          m->client_id != before.client_id || m->client_host != before.client_host ||
          req.member_epoch == 0)
        records.push_back(ConsumerGroupMemberEntry(g.id, *m));
      m->session_deadline_ms = now + settings.consumer_session_timeout_ms;
      const std::string member_id = m->member_id;

      // The subscribed topics' metadata: a new topic or new partitions of
      // one make a new assignment.
      std::map<std::string, SubscribedTopic> topics;
      std::set<std::string> names = cg.SubscribedTopicNames();
      std::set<std::string> regexes = cg.SubscribedRegexes();
      // Regexes are matched against every topic name on each heartbeat:
      // O(topics x regexes) (Kafka resolves them asynchronously instead).
      if (!regexes.empty() && all_topics) {
        std::vector<std::regex> compiled;
        for (const std::string& re : regexes) compiled.emplace_back(re);
        for (const std::string& name : all_topics()) {
          if (name.rfind("__", 0) == 0) continue;  // internal topics are never matched
          for (const std::regex& re : compiled)
            if (std::regex_match(name, re)) {
              names.insert(name);
              break;
            }
        }
      }
      for (const std::string& name : names) {
        std::optional<TopicInfo> t = lookup ? lookup(name) : std::nullopt;
        if (t && t->partitions > 0) topics[name] = SubscribedTopic{t->id, t->partitions};
      }
      if (topics != cg.topics) {
        cg.topics = std::move(topics);
        records.push_back(ConsumerGroupPartitionMetadataEntry(g.id, cg.topics));
        bump = true;
      }
      if (bump) ++cg.group_epoch;
      if (cg.group_epoch != old_epoch) records.push_back(ConsumerGroupMetadataEntry(g.id, cg.group_epoch));

      // A new target assignment for the new group epoch.
      if (cg.group_epoch > cg.assignment_epoch) {
        cg.assignor = ChooseAssignor(cg, config_.consumer_assignors);
        std::vector<AssignorMember> in;
        for (const auto& [id, mm] : cg.members) {
          auto t = cg.target.find(id);
          std::vector<std::string> subs = mm.subscribed_topics;
          if (mm.subscribed_regex) {
            std::regex re(*mm.subscribed_regex);
            for (const auto& [name, t] : cg.topics)
              if (std::regex_match(name, re)) subs.push_back(name);
            std::sort(subs.begin(), subs.end());
            subs.erase(std::unique(subs.begin(), subs.end()), subs.end());
          }
          in.push_back(AssignorMember{id, mm.instance_id, std::move(subs),
                                      t == cg.target.end() ? TopicPartitions{} : t->second});
        }
        AssignorTopics counts;
        for (const auto& [name, t] : cg.topics) counts[name] = t.partitions;
        std::map<std::string, TopicPartitions> target = RunAssignor(cg.assignor, in, counts);
        for (const auto& [id, tps] : target) {
          auto old = cg.target.find(id);
          if (old == cg.target.end() || old->second != tps)
            records.push_back(ConsumerGroupTargetMemberEntry(g.id, id, tps));
        }
        cg.target = std::move(target);
        cg.assignment_epoch = cg.group_epoch;
        records.push_back(ConsumerGroupTargetMetadataEntry(g.id, cg.assignment_epoch));
        HR_LOG(kDebug) << "group " << g.id << ": target assignment epoch " << cg.assignment_epoch
                       << " by " << cg.assignor << " for " << cg.members.size() << " members";
      }

      // Reconcile this member towards its target.
      m = cg.FindMember(member_id);
      std::optional<TopicPartitions> owned;
      if (req.owned) owned = OwnedByName(*req.owned, cg);
      const TopicPartitions assigned_before = m->assigned;
      const bool changed = ReconcileMember(
          *m, cg.assignment_epoch, cg.target[member_id], owned,
          [&](const std::string& topic, int32_t p) { return cg.HeldByOther(member_id, topic, p); });
      if (m->state == ConsumerMemberState::kUnrevokedPartitions) {
        if (m->revocation_deadline_ms == 0) m->revocation_deadline_ms = now + m->rebalance_timeout_ms;
      } else {
        m->revocation_deadline_ms = 0;
      }
      if (changed || req.member_epoch == 0) records.push_back(ConsumerGroupCurrentAssignmentEntry(g.id, *m));
      SyncConsumerGroupState(g, now);
      AppendRecords(g.id, records);

      r.member_id = member_id;
      r.member_epoch = m->member_epoch;
      r.heartbeat_interval_ms = settings.consumer_heartbeat_interval_ms;
      if (req.member_epoch == 0 || m->assigned != assigned_before ||
          (owned && *owned != m->assigned))
        r.assignment = ToIds(m->assigned, cg);
      HR_LOG(kDebug) << "group " << g.id << ": consumer member " << member_id << " epoch "
                     << req.member_epoch << " -> " << m->member_epoch << " "
                     << ConsumerMemberStateName(m->state) << " (group epoch " << cg.group_epoch
                     << ")";
    }
    return r;
    }();
    // Records of a request that failed after changing state (a converted
    // group, a replaced static member) are kept too.
    if (result.error != KafkaError::kNone) AppendRecords(req.group_id, records);
  }
  RunAll(done);
  return result;
}

ConsumerGroupDescription GroupCoordinator::DescribeConsumerGroup(const std::string& group_id) {
  ConsumerGroupDescription d;
  d.group_id = group_id;
  Done done;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stopped_) {
      d.error = KafkaError::kCoordinatorNotAvailable;
      return d;
    }
    auto it = groups_.find(group_id);
    if (it == groups_.end() || !it->second.is_consumer) {
      d.error = KafkaError::kGroupIdNotFound;
      d.error_message = it == groups_.end() ? "Group " + group_id + " not found."
                                            : "Group " + group_id + " is not a consumer group.";
      return d;
    }
    Group& g = it->second;
    ExpireDue(g, Now(), done);
    const ConsumerGroup& cg = g.consumer;
    d.state = ConsumerGroupStateName(cg.State());
    d.group_epoch = cg.group_epoch;
    d.assignment_epoch = cg.assignment_epoch;
    d.assignor = cg.assignor.empty() ? config_.consumer_assignors.front() : cg.assignor;
    for (const auto& [id, m] : cg.members) {
      auto t = cg.target.find(id);
      d.members.push_back({m, t == cg.target.end() ? TopicPartitions{} : t->second});
    }
    for (const auto& [name, t] : cg.topics) d.topic_ids[name] = t.id;
  }
  RunAll(done);
  return d;
}

KafkaError GroupCoordinator::CheckConsumerCommit(Group& g, const CommitRequest& req) {
  // An admin or a consumer outside group management (epoch -1) may commit
  // while the group has no members.
  if (req.generation < 0 && g.consumer.members.empty()) return KafkaError::kNone;
  ConsumerMember* m = g.consumer.FindMember(req.member_id);
  if (!m) return KafkaError::kUnknownMemberId;
  if (req.api_version < 9) return KafkaError::kUnsupportedVersion;
  if (req.generation != m->member_epoch) return KafkaError::kStaleMemberEpoch;
  return KafkaError::kNone;
}

void GroupCoordinator::ApplyConsumerLogEntry(const RecordKey& key,
                                             const std::optional<std::string>& value) {
  if (!value && key.kind == RecordKind::kConsumerGroupMetadata) {
    // The group stopped being a consumer group (deleted or downgraded).
    auto it = groups_.find(key.group);
    if (it != groups_.end() && it->second.is_consumer) {
      it->second.is_consumer = false;
      it->second.consumer = ConsumerGroup{};
      it->second.protocol_type.clear();
    }
    return;
  }
  if (!value && !groups_.count(key.group)) return;
  Group& g = GetOrCreate(key.group);
  if (!g.is_consumer) {
    g.is_consumer = true;
    g.protocol_type = "consumer";
    g.members.clear();
    g.static_members.clear();
    g.protocol.reset();
    g.leader.clear();
  }
  Status st = ApplyConsumerGroupRecord(g.consumer, key, value);
  if (!st.ok()) { HR_LOG(kWarn) << "group log: " << st.ToString(); }
}

void GroupCoordinator::FinishConsumerGroupLoad(Group& g, int64_t now) {
  ConsumerGroup& cg = g.consumer;
  for (auto it = cg.members.begin(); it != cg.members.end();) {
    if (!it->second.has_metadata) {
      it = cg.members.erase(it);
      continue;
    }
    ConsumerMember& m = it->second;
    m.session_deadline_ms = now + SettingsFor(g.id).consumer_session_timeout_ms;
    m.revocation_deadline_ms =
        m.state == ConsumerMemberState::kUnrevokedPartitions ? now + m.rebalance_timeout_ms : 0;
    ++it;
  }
  for (auto it = cg.target.begin(); it != cg.target.end();)
    it = cg.members.count(it->first) ? std::next(it) : cg.target.erase(it);
  cg.assignor = ChooseAssignor(cg, config_.consumer_assignors);
  g.state = cg.members.empty() ? GroupState::kEmpty : GroupState::kStable;
}

}  // namespace headrace::broker::group
