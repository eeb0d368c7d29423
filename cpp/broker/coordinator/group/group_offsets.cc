// Committed offsets (OffsetCommit/OffsetFetch/OffsetDelete), persistence of
// group metadata, and offsets.retention.minutes.
#include <algorithm>
#include <set>

#include "broker/coordinator/group/group_coordinator.h"
#include "broker/coordinator/group/group_log_entries.h"
#include "common/logging.h"

namespace headrace::broker::group {

Status GroupCoordinator::PersistGroup(const Group& g) {
  if (!log_) return Status::Closed("group coordinator stopped");
  // Membership is not fsynced (as in Kafka): losing the last generation in a
  // crash only costs a rebalance, while an fsync here sits on every
  // JoinGroup/SyncGroup round trip. Offsets stay durable (Commit).
  return log_->Append({GroupEntry(g)});
}

void GroupCoordinator::MaybeCompact() {
  if (!log_ || log_->size_bytes() < next_compaction_bytes_) return;
  const int64_t before = log_->size_bytes();
  std::vector<GroupLog::Entry> live;
  int64_t live_bytes = 0;
  // The producers' fence epochs, restated so that they end nothing when
  // replayed: a copy replayed after the records it copies (a crash before
  // the log start moves, a coordinator loading the log) must not end the
  // transaction whose offsets are pending then.
  for (auto [pid, end] : ended_txns_) {
    end.fence_only = true;
    live.push_back(TxnEndEntry(pid, end));
  }
  for (const auto& [id, g] : groups_) AppendLiveEntries(g, &live);
  for (const GroupLog::Entry& e : live) live_bytes += e.key.size() + (e.value ? e.value->size() : 0);
  Status st = log_->Rewrite(live);
  // Next time once as much again as the live state (at least one segment)
  // has been appended: compaction costs O(1) per appended byte. The older
  // records are dropped only once the copy is flushed (GroupLog), so the log
  // is measured as it will be then: at most the segment the copy starts in
  // plus the copy.
  const int64_t copy_bytes = log_->size_bytes() - before;
  const int64_t after = std::min(log_->size_bytes(), config_.log_segment_bytes + copy_bytes);
  next_compaction_bytes_ = after + std::max(config_.log_segment_bytes, live_bytes);
  if (!st.ok()) {
    HR_LOG(kWarn) << "group log compaction: " << st.ToString();
    return;
  }
  HR_LOG(kInfo) << "group log compaction: " << live.size() << " live records (" << live_bytes
                << " bytes) rewritten; the older " << before
                << " bytes go once the copy is flushed";
}

std::vector<KafkaError> GroupCoordinator::Commit(const CommitRequest& req) {
  std::vector<KafkaError> out(req.partitions.size(), KafkaError::kNone);
  auto fail_all = [&](KafkaError e) {
    std::fill(out.begin(), out.end(), e);
    return out;
  };
  Done done;  // callbacks of sessions expired below, run once unlocked
  struct RunAtExit {
    Done& d;
    ~RunAtExit() { RunAll(d); }
  } run_at_exit{done};
  std::lock_guard<std::mutex> l(mu_);
  if (stopped_ || !log_) return fail_all(KafkaError::kCoordinatorNotAvailable);
  if (req.group_id.empty()) return fail_all(KafkaError::kInvalidGroupId);
  int64_t now = Now();
  auto it = groups_.find(req.group_id);
  if (it != groups_.end()) ExpireDue(it->second, now, done);
  if (it != groups_.end() && it->second.is_consumer) {
    KafkaError e = CheckConsumerCommit(it->second, req);
    if (e != KafkaError::kNone) return fail_all(e);
  } else if (it == groups_.end()) {
    // Only a simple consumer (no generation) may create a group by committing.
    if (req.generation >= 0) return fail_all(KafkaError::kIllegalGeneration);
  } else {
    Group& g = it->second;
    bool simple = req.generation < 0 && g.Is(GroupState::kEmpty);
    if (!simple) {
      if (g.Is(GroupState::kCompletingRebalance)) return fail_all(KafkaError::kRebalanceInProgress);
      KafkaError e = CheckMember(g, req.member_id, req.instance_id);
      if (e != KafkaError::kNone) return fail_all(e);
      if (req.generation != g.generation) return fail_all(KafkaError::kIllegalGeneration);
      Member& m = *g.FindMember(req.member_id);
      m.session_deadline_ms = now + m.session_timeout_ms;
    }
  }
  StoreOffsets(
      req.group_id, req.partitions, now, "offset commit", out,
      [&](const TopicPartitionKey& tp, const CommittedOffset& c) {
        return OffsetEntry(req.group_id, tp, c);
      },
      [](Group& g, const TopicPartitionKey& tp, CommittedOffset c) { g.offsets[tp] = std::move(c); });
  return out;
}

void GroupCoordinator::StoreOffsets(
    const std::string& group_id, const std::vector<CommitPartition>& partitions, int64_t now,
    const char* what, std::vector<KafkaError>& out,
    const std::function<GroupLog::Entry(const TopicPartitionKey&, const CommittedOffset&)>& entry,
    const std::function<void(Group&, const TopicPartitionKey&, CommittedOffset)>& store) {
  std::vector<GroupLog::Entry> entries;
  std::vector<std::pair<TopicPartitionKey, CommittedOffset>> stored;
  for (size_t i = 0; i < partitions.size(); ++i) {
    const CommitPartition& p = partitions[i];
    if (p.metadata && p.metadata->size() > static_cast<size_t>(config_.offset_metadata_max_bytes)) {
      out[i] = KafkaError::kOffsetMetadataTooLarge;
      continue;
    }
    TopicPartitionKey tp{p.topic, p.partition};
    CommittedOffset c{p.offset, p.leader_epoch, p.metadata, now};
    entries.push_back(entry(tp, c));
    stored.emplace_back(std::move(tp), std::move(c));
  }
  if (entries.empty()) return;
  Status st = log_->Append(entries);
  if (!st.ok()) {
    HR_LOG(kWarn) << "group " << group_id << ": " << what << " not stored: " << st.ToString();
    for (KafkaError& e : out)
      if (e == KafkaError::kNone) e = KafkaError::kCoordinatorNotAvailable;
    return;
  }
  Group& g = GetOrCreate(group_id);
  for (auto& [tp, c] : stored) {
    c.log_order = next_log_order_++;
    store(g, tp, std::move(c));
  }
}

KafkaError GroupCoordinator::FetchOffsets(
    const std::string& group_id, const std::optional<std::vector<TopicPartitionKey>>& partitions,
    std::vector<FetchedOffset>* out, bool require_stable,
    const std::optional<std::string>& member_id, int32_t member_epoch) {
  std::lock_guard<std::mutex> l(mu_);
  if (stopped_) return KafkaError::kCoordinatorNotAvailable;
  if (group_id.empty()) return KafkaError::kInvalidGroupId;
  auto it = groups_.find(group_id);
  const Group* g = it == groups_.end() ? nullptr : &it->second;
  // No member (null, or empty as some clients send it) with epoch < 0: an
  // admin or a client outside the group; accepted.
  const bool anonymous = (!member_id || member_id->empty()) && member_epoch < 0;
  if (g && g->is_consumer && !anonymous) {
    // OffsetFetch v9 by a KIP-848 member (Kafka's validateOffsetFetch).
    auto m = g->consumer.members.find(member_id.value_or(""));
    if (m == g->consumer.members.end()) return KafkaError::kUnknownMemberId;
    if (m->second.member_epoch != member_epoch) return KafkaError::kStaleMemberEpoch;
  }
  // KIP-447: with require_stable, a partition some open transaction has an
  // offset for answers UNSTABLE_OFFSET_COMMIT (and -1) until it ends.
  auto unstable = [&](FetchedOffset& f) {
    if (!require_stable || !g || !g->HasPendingTxnOffset({f.topic, f.partition})) return;
    f.committed = CommittedOffset{};
    f.error = KafkaError::kUnstableOffsetCommit;
  };
  if (!partitions) {
    if (g)
      for (const auto& [tp, c] : g->offsets) {
        FetchedOffset f{tp.first, tp.second, c};
        unstable(f);
        out->push_back(std::move(f));
      }
    return KafkaError::kNone;
  }
  for (const TopicPartitionKey& tp : *partitions) {
    FetchedOffset f{tp.first, tp.second, CommittedOffset{}};
    if (g) {
      auto c = g->offsets.find(tp);
      if (c != g->offsets.end()) f.committed = c->second;
    }
    unstable(f);
    out->push_back(std::move(f));
  }
  return KafkaError::kNone;
}

KafkaError GroupCoordinator::DeleteOffsets(const std::string& group_id,
                                           const std::vector<TopicPartitionKey>& partitions,
                                           std::vector<KafkaError>* per_partition) {
  std::lock_guard<std::mutex> l(mu_);
  if (stopped_ || !log_) return KafkaError::kCoordinatorNotAvailable;
  if (group_id.empty()) return KafkaError::kInvalidGroupId;
  auto it = groups_.find(group_id);
  if (it == groups_.end()) return KafkaError::kGroupIdNotFound;
  Group& g = it->second;
  if (!g.members.empty() && g.protocol_type != "consumer") return KafkaError::kNonEmptyGroup;
  std::vector<std::string> subscribed = g.SubscribedTopics();
  if (g.is_consumer) {
    std::set<std::string> names = g.consumer.SubscribedTopicNames();
    subscribed.assign(names.begin(), names.end());
  }
  std::vector<GroupLog::Entry> entries;
  std::vector<TopicPartitionKey> removed;
  for (const TopicPartitionKey& tp : partitions) {
    bool busy = std::find(subscribed.begin(), subscribed.end(), tp.first) != subscribed.end();
    per_partition->push_back(busy ? KafkaError::kGroupSubscribedToTopic : KafkaError::kNone);
    if (busy) continue;
    // A deleted offset takes the partition's pending transactional offsets
    // with it (as Kafka): a later commit of their transaction does not
    // bring it back.
    for (const auto& [pid, txn] : g.pending_txn_offsets)
      if (txn.offsets.count(tp))
        entries.push_back(PendingTxnOffsetEntry(group_id, pid, txn.producer_epoch, tp, std::nullopt));
    if (!g.offsets.count(tp) && !g.HasPendingTxnOffset(tp)) continue;
    if (g.offsets.count(tp)) entries.push_back(OffsetEntry(group_id, tp, std::nullopt));
    removed.push_back(tp);
  }
  if (entries.empty()) return KafkaError::kNone;
  Status st = log_->Append(entries);
  if (!st.ok()) return KafkaError::kCoordinatorNotAvailable;
  for (const TopicPartitionKey& tp : removed) {
    g.offsets.erase(tp);
    ErasePendingTxnOffset(g, tp);
  }
  return KafkaError::kNone;
}

// offsets.retention.minutes: in an Empty group, an offset expires once the
// retention has passed since the later of its commit and the group becoming
// Empty. A group left with neither members nor offsets is deleted.
void GroupCoordinator::ExpireOffsets(int64_t now) {
  if (!log_) return;
  // A fenced producer's request does not arrive this late: the ends are
  // forgotten (memory only; the next compaction drops their records).
  std::erase_if(ended_txns_, [&](const auto& e) {
    return now - e.second.end_time_ms >= config_.offsets_retention_ms;
  });
  for (auto it = groups_.begin(); it != groups_.end();) {
    Group& g = it->second;
    if (!g.Is(GroupState::kEmpty) || !g.pending_members.empty()) {
      ++it;
      continue;
    }
    std::vector<GroupLog::Entry> entries;
    std::vector<TopicPartitionKey> expired;
    for (const auto& [tp, c] : g.offsets) {
      int64_t base = std::max(c.commit_time_ms, g.state_time_ms);
      if (now - base < config_.offsets_retention_ms) continue;
      entries.push_back(OffsetEntry(g.id, tp, std::nullopt));
      expired.push_back(tp);
    }
    // Pending transactional offsets do not expire (their transaction ends
    // them) and keep the group.
    bool drop_group = expired.size() == g.offsets.size() && g.pending_txn_offsets.empty();
    if (drop_group) AppendGroupTombstones(g, &entries);
    if (entries.empty()) {
      ++it;
      continue;
    }
    Status st = log_->Append(entries);
    if (!st.ok()) {
      HR_LOG(kWarn) << "group " << g.id << ": expiring offsets: " << st.ToString();
      ++it;
      continue;
    }
    if (!expired.empty()) {
      HR_LOG(kInfo) << "group " << g.id << ": expired " << expired.size() << " offsets";
    }
    for (const TopicPartitionKey& tp : expired) g.offsets.erase(tp);
    it = drop_group ? groups_.erase(it) : std::next(it);
  }
}

std::vector<GroupListing> GroupCoordinator::ListGroups(const std::vector<std::string>& states) {
  auto lower = [](std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  std::vector<std::string> wanted;
  for (const std::string& s : states) wanted.push_back(lower(s));
  std::vector<GroupListing> out;
  Done done;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!stopped_) ExpireAllDue(Now(), done);
    for (const auto& [id, g] : groups_) {
      if (!wanted.empty() &&
          std::find(wanted.begin(), wanted.end(), lower(g.StateName())) == wanted.end())
        continue;
      out.push_back(GroupListing{id, g.protocol_type, g.StateName(), g.TypeName()});
    }
  }
  RunAll(done);
  return out;
}

GroupDescription GroupCoordinator::Describe(const std::string& group_id) {
  Done done;
  GroupDescription d = DescribeLocked(group_id, done);
  RunAll(done);
  return d;
}

GroupDescription GroupCoordinator::DescribeLocked(const std::string& group_id, Done& done) {
  GroupDescription d;
  d.group_id = group_id;
  std::lock_guard<std::mutex> l(mu_);
  if (stopped_) {
    d.error = KafkaError::kCoordinatorNotAvailable;
    return d;
  }
  if (group_id.empty()) {
    d.error = KafkaError::kInvalidGroupId;
    return d;
  }
  auto it = groups_.find(group_id);
  if (it == groups_.end()) return d;  // Dead, no error (as Kafka's classic groups)
  // A consumer-protocol group is not a classic group: Kafka 3.9 describes
  // it as an unknown one (Dead, no error); ConsumerGroupDescribe shows it.
  if (it->second.is_consumer || it->second.share) return d;
  ExpireDue(it->second, Now(), done);
  const Group& g = it->second;
  bool stable = g.Is(GroupState::kStable);
  d.state = g.state;
  d.protocol_type = g.protocol_type;
  if (stable) d.protocol = g.protocol.value_or("");
  for (const auto& [id, m] : g.members) {
    DescribedMember dm{id, m.instance_id, m.client_id, m.client_host, "", ""};
    if (stable) {
      dm.metadata = m.MetadataFor(g.protocol);
      dm.assignment = m.assignment;
    }
    d.members.push_back(std::move(dm));
  }
  return d;
}

KafkaError GroupCoordinator::DeleteGroup(const std::string& group_id) {
  Done done;
  KafkaError e = DeleteGroupLocked(group_id, done);
  RunAll(done);
  return e;
}

KafkaError GroupCoordinator::DeleteGroupLocked(const std::string& group_id, Done& done) {
  std::lock_guard<std::mutex> l(mu_);
  if (stopped_ || !log_) return KafkaError::kCoordinatorNotAvailable;
  if (group_id.empty()) return KafkaError::kInvalidGroupId;
  auto it = groups_.find(group_id);
  if (it == groups_.end()) return KafkaError::kGroupIdNotFound;
  Group& g = it->second;
  // Sessions that ran out by now end first: a client that waited the
  // session timeout finds the group empty.
  ExpireDue(g, Now(), done);
  if (!g.Is(GroupState::kEmpty) || (g.share && !g.share->members().empty()))
    return KafkaError::kNonEmptyGroup;
  std::vector<GroupLog::Entry> entries;
  for (const auto& [tp, c] : g.offsets) entries.push_back(OffsetEntry(group_id, tp, std::nullopt));
  // The tombstone also ends the group's pending transactional offsets (a
  // later CompleteTxn finds nothing of it to commit, as Kafka's Dead group).
  AppendGroupTombstones(g, &entries);
  Status st = log_->Append(entries);
  if (!st.ok()) return KafkaError::kCoordinatorNotAvailable;
  ForgetGroup(it);
  return KafkaError::kNone;
}

}  // namespace headrace::broker::group
