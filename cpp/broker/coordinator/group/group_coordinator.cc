#include "broker/coordinator/group/group_coordinator.h"

#include <algorithm>

#include "broker/coordinator/group/group_records.h"
#include "common/logging.h"

namespace headrace::broker::group {
namespace {

int64_t SystemNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

GroupCoordinator::GroupCoordinator(Options options)
    : config_(options.config),
      data_dir_(std::move(options.data_dir)),
      now_ms_(options.now_ms ? std::move(options.now_ms) : SystemNowMs),
      share_member_gone_(std::move(options.share_member_gone)),
      group_configs_(std::move(options.group_configs)) {}

EffectiveGroupSettings GroupCoordinator::SettingsFor(const std::string& group) const {
  return EffectiveSettingsOf(group_configs_ ? group_configs_(group) : ConfigMap{}, config_);
}

Result<std::unique_ptr<GroupCoordinator>> GroupCoordinator::Open(Options options) {
  bool start_timer = options.start_timer;
  const PartitionServices options_services = options.log_services;
  FileEnv* env = options.env;
  std::shared_ptr<Partition> options_partition = std::move(options.log_partition);
  std::unique_ptr<GroupCoordinator> c(new GroupCoordinator(std::move(options)));
  PartitionServices services = options_services;
  services.commit_requires_fsync = c->config_.commit_fsync;
  if (options_partition) {
    c->log_partition_attached_ = true;
    c->log_name_ = options_partition->topic_partition().ToString();
    c->log_ = GroupLog::Attach(std::move(options_partition));
  } else {
    HR_ASSIGN_OR_RETURN(c->log_,
                        GroupLog::Open(c->data_dir_, services, c->config_.log_segment_bytes, env));
  }
  c->log_partition_ = c->log_->partition();
  HR_RETURN_IF_ERROR(c->Load());
  c->next_compaction_bytes_ = c->config_.log_segment_bytes;
  c->next_retention_check_ms_ = c->Now() + c->config_.offsets_retention_check_interval_ms;
  if (start_timer) {
    c->timer_ = std::thread([p = c.get()] {
      pthread_setname_np(pthread_self(), "hr-group-timer");
      p->TimerLoop();
    });
  }
  return c;
}

GroupCoordinator::~GroupCoordinator() { Stop(); }

Status GroupCoordinator::Load() {
  int64_t records = 0;
  HR_RETURN_IF_ERROR(log_->Replay([&](const GroupLog::Entry& e) {
    ++records;
    ApplyLogEntry(e);
  }));
  // Groups come back as they were last stored: with members = Stable (they
  // must heartbeat within their session timeout), without = Empty.
  int64_t now = Now();
  for (auto it = groups_.begin(); it != groups_.end();) {
    Group& g = it->second;
    if (g.Unused()) {
      it = groups_.erase(it);
      continue;
    }
    if (g.is_consumer) {
      FinishConsumerGroupLoad(g, now);
      ++it;
      continue;
    }
    g.state = g.members.empty() ? GroupState::kEmpty : GroupState::kStable;
    for (auto& [id, m] : g.members) m.session_deadline_ms = now + m.session_timeout_ms;
    ++it;
  }
  // Cluster mode: one coordinator per led partition, most of them empty;
  // only the ones with something to load say so.
  if (records > 0 || !log_partition_attached_) {
    HR_LOG(kInfo) << "group coordinator: loaded " << groups_.size() << " groups from " << records
                  << " records" << (log_partition_attached_ ? " of " + log_name_ : "");
  }
  return Status::OK();
}

void GroupCoordinator::ApplyLogEntry(const GroupLog::Entry& e) {
  auto key = DecodeKey(e.key);
  if (!key.ok()) {
    HR_LOG(kWarn) << "group log: skipping record: " << key.status().ToString();
    return;
  }
  if (key->kind == RecordKind::kPendingTxnOffset || key->kind == RecordKind::kTxnEnd)
    return ApplyTxnLogEntry(*key, e.value);
  if (key->kind >= RecordKind::kConsumerGroupMetadata) return ApplyConsumerLogEntry(*key, e.value);
  if (key->kind == RecordKind::kOffset) {
    TopicPartitionKey tp{key->topic, key->partition};
    if (!e.value) {
      auto it = groups_.find(key->group);
      if (it != groups_.end()) it->second.offsets.erase(tp);
      return;
    }
    auto v = DecodeOffsetValue(*e.value);
    if (!v.ok()) { HR_LOG(kWarn) << "group log: " << v.status().ToString(); return; }
    Group& g = GetOrCreate(key->group);
    CommittedOffset c{v->offset, v->leader_epoch, v->metadata, v->commit_time_ms};
    auto cur = g.offsets.find(tp);
    c.log_order = ReplayedOrder(cur == g.offsets.end() ? nullptr : &cur->second, c);
    g.offsets[tp] = std::move(c);
    return;
  }
  if (!e.value) {
    auto it = groups_.find(key->group);
    if (it != groups_.end()) ForgetGroup(it);
    return;
  }
  auto v = DecodeGroupValue(*e.value);
  if (!v.ok()) { HR_LOG(kWarn) << "group log: " << v.status().ToString(); return; }
  Group& g = GetOrCreate(key->group);
  g.protocol_type = v->protocol_type;
  g.generation = v->generation;
  g.protocol = v->protocol;
  g.leader = v->leader;
  g.state_time_ms = v->state_time_ms;
  g.members.clear();
  g.static_members.clear();
  for (StoredMember& sm : v->members) {
    Member& m = g.members[sm.member_id];
    m.member_id = sm.member_id;
    m.instance_id = sm.instance_id;
    m.client_id = sm.client_id;
    m.client_host = sm.client_host;
    m.session_timeout_ms = sm.session_timeout_ms;
    m.rebalance_timeout_ms = sm.rebalance_timeout_ms;
    m.protocol_type = v->protocol_type;
    if (v->protocol) m.protocols = {Protocol{*v->protocol, sm.metadata}};
    m.assignment = sm.assignment;
    if (m.instance_id) g.static_members[*m.instance_id] = m.member_id;
  }
}

void GroupCoordinator::RunAll(Done& done) {
  for (auto& fn : done) fn();
  done.clear();
}

void GroupCoordinator::Join(JoinRequest req, JoinCallback cb) {
  Done done;
  {
    std::lock_guard<std::mutex> l(mu_);
    int64_t now = Now();
    KafkaError err = KafkaError::kNone;
    if (stopped_) err = KafkaError::kCoordinatorNotAvailable;
    else if (req.group_id.empty()) err = KafkaError::kInvalidGroupId;
    else if (req.session_timeout_ms < config_.min_session_timeout_ms ||
             req.session_timeout_ms > config_.max_session_timeout_ms)
      err = KafkaError::kInvalidSessionTimeout;
    if (req.rebalance_timeout_ms < 0) req.rebalance_timeout_ms = req.session_timeout_ms;
    Group* g = nullptr;
    if (err == KafkaError::kNone) {
      g = &GetOrCreate(req.group_id);
      ExpireDue(*g, now, done);
      if (g->share) {
        err = KafkaError::kInconsistentGroupProtocol;  // a share group's id
      } else if (g->is_consumer) {
        // Kafka 3.9 without online migration: a classic member may not join
        // a consumer group with members; an empty one becomes classic.
        if (!g->consumer.members.empty()) {
          err = KafkaError::kInconsistentGroupProtocol;
        } else {
          std::vector<GroupLog::Entry> records;
          ConvertToClassicGroup(*g, &records);
          AppendRecords(g->id, records);
        }
      }
    }
    if (err == KafkaError::kNone) {
      Member* m = req.member_id.empty() ? nullptr : g->FindMember(req.member_id);
      bool pending = g->pending_members.count(req.member_id) > 0;
      if (!g->AcceptsProtocols(req.protocol_type, req.protocols))
        err = KafkaError::kInconsistentGroupProtocol;
      else if (!req.member_id.empty() && req.instance_id &&
               CheckMember(*g, req.member_id, req.instance_id) == KafkaError::kFencedInstanceId)
        err = KafkaError::kFencedInstanceId;
      else if (!req.member_id.empty() && !m && !pending)
        err = KafkaError::kUnknownMemberId;
      else if (!m && !pending && g->members.size() >= static_cast<size_t>(config_.max_size))
        err = KafkaError::kGroupMaxSizeReached;
      HR_LOG(kDebug) << "group " << req.group_id << ": JoinGroup member '" << req.member_id
                     << "' (" << (m ? "known" : pending ? "pending" : "new") << ") in "
                     << GroupStateName(g->state) << " generation " << g->generation;
      if (err == KafkaError::kNone) {
        if (req.member_id.empty()) JoinNew(*g, req, std::move(cb), now, done);
        else if (pending) AddMember(*g, req.member_id, req, std::move(cb), now, done);
        else JoinExisting(*g, *m, req, std::move(cb), now, done);
      } else if (g->members.empty() && g->offsets.empty() && g->Is(GroupState::kEmpty) &&
                 g->pending_members.empty() && g->generation == 0 &&
                 g->pending_txn_offsets.empty()) {
        groups_.erase(req.group_id);  // do not keep a group a failed join created
      }
    }
    if (err != KafkaError::kNone) {
      JoinResult r;
      r.error = err;
      r.member_id = req.member_id;
      done.push_back([cb = std::move(cb), r = std::move(r)]() mutable { cb(std::move(r)); });
    }
  }
  RunAll(done);
}

void GroupCoordinator::Sync(SyncRequest req, SyncCallback cb) {
  Done done;
  SyncResult r;
  bool parked = false;
  {
    std::lock_guard<std::mutex> l(mu_);
    int64_t now = Now();
    auto it = groups_.find(req.group_id);
    if (!stopped_ && it != groups_.end()) ExpireDue(it->second, now, done);
    if (stopped_) r.error = KafkaError::kCoordinatorNotAvailable;
    else if (req.group_id.empty()) r.error = KafkaError::kInvalidGroupId;
    else if (it == groups_.end()) r.error = KafkaError::kUnknownMemberId;
    else r.error = CheckMember(it->second, req.member_id, req.instance_id);
    if (r.error == KafkaError::kNone) {
      Group& g = it->second;
      Member& m = *g.FindMember(req.member_id);
      if (req.generation != g.generation) r.error = KafkaError::kIllegalGeneration;
      else if ((req.protocol_type && *req.protocol_type != g.protocol_type) ||
               (req.protocol_name && *req.protocol_name != g.protocol.value_or("")))
        r.error = KafkaError::kInconsistentGroupProtocol;
      else if (g.Is(GroupState::kPreparingRebalance)) r.error = KafkaError::kRebalanceInProgress;
      else if (g.Is(GroupState::kStable)) {
        m.session_deadline_ms = now + m.session_timeout_ms;
        r.protocol_type = g.protocol_type;
        r.protocol_name = g.protocol;
        r.assignment = m.assignment;
      } else if (g.Is(GroupState::kCompletingRebalance)) {
        m.session_deadline_ms = now + m.session_timeout_ms;
        m.awaiting_sync = std::move(cb);
        parked = true;
        if (req.member_id == g.leader) {
          std::map<std::string, std::string> given(req.assignments.begin(), req.assignments.end());
          for (auto& [id, member] : g.members) {
            auto a = given.find(id);
            member.assignment = a == given.end() ? "" : a->second;
          }
          SetState(g, GroupState::kStable, now);
          Status st = PersistGroup(g);
          if (!st.ok()) { HR_LOG(kWarn) << "group " << g.id << ": persisting: " << st.ToString(); }
          for (auto& [id, member] : g.members) {
            if (!member.awaiting_sync) continue;
            SyncResult ok;
            ok.protocol_type = g.protocol_type;
            ok.protocol_name = g.protocol;
            ok.assignment = member.assignment;
            done.push_back([cb = std::move(member.awaiting_sync), ok]() { cb(ok); });
            member.awaiting_sync = nullptr;
          }
        }
      } else {
        r.error = KafkaError::kUnknownMemberId;
      }
    }
  }
  HR_LOG(kDebug) << "group " << req.group_id << ": SyncGroup member " << req.member_id
                 << " generation " << req.generation << " -> "
                 << (parked ? "parked" : KafkaErrorName(r.error));
  if (!parked) cb(std::move(r));
  RunAll(done);
}

KafkaError GroupCoordinator::Heartbeat(const std::string& group_id, const std::string& member_id,
                                       const std::optional<std::string>& instance_id,
                                       int32_t generation) {
  Done done;
  KafkaError e = HeartbeatLocked(group_id, member_id, instance_id, generation, done);
  RunAll(done);
  return e;
}

KafkaError GroupCoordinator::HeartbeatLocked(const std::string& group_id,
                                             const std::string& member_id,
                                             const std::optional<std::string>& instance_id,
                                             int32_t generation, Done& done) {
  std::lock_guard<std::mutex> l(mu_);
  if (stopped_) return KafkaError::kCoordinatorNotAvailable;
  if (group_id.empty()) return KafkaError::kInvalidGroupId;
  auto it = groups_.find(group_id);
  if (it == groups_.end()) return KafkaError::kUnknownMemberId;
  Group& g = it->second;
  ExpireDue(g, Now(), done);
  KafkaError e = CheckMember(g, member_id, instance_id);
  if (e == KafkaError::kNone && generation != g.generation) e = KafkaError::kIllegalGeneration;
  if (e == KafkaError::kNone) {
    Member& m = *g.FindMember(member_id);
    m.session_deadline_ms = Now() + m.session_timeout_ms;
    if (g.Is(GroupState::kPreparingRebalance)) e = KafkaError::kRebalanceInProgress;
  }
  if (e != KafkaError::kNone) {
    HR_LOG(kDebug) << "group " << group_id << ": Heartbeat member " << member_id << " generation "
                   << generation << " -> " << KafkaErrorName(e);
  }
  return e;
}

std::pair<KafkaError, std::vector<KafkaError>> GroupCoordinator::Leave(
    const std::string& group_id, const std::vector<LeaveMember>& members) {
  Done done;
  std::pair<KafkaError, std::vector<KafkaError>> out{KafkaError::kNone, {}};
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = groups_.find(group_id);
    if (stopped_) out.first = KafkaError::kCoordinatorNotAvailable;
    else if (group_id.empty()) out.first = KafkaError::kInvalidGroupId;
    else if (it == groups_.end()) out.first = KafkaError::kUnknownMemberId;
    if (out.first == KafkaError::kNone) {
      Group& g = it->second;
      int64_t now = Now();
      ExpireDue(g, now, done);
      for (const LeaveMember& lm : members) {
        std::string id = lm.member_id;
        if (id.empty() && lm.instance_id) {
          auto s = g.static_members.find(*lm.instance_id);
          if (s != g.static_members.end()) id = s->second;
        }
        KafkaError e = CheckMember(g, id, lm.instance_id);
        if (e == KafkaError::kNone) RemoveMember(g, id, KafkaError::kUnknownMemberId, now, done);
        out.second.push_back(e);
      }
    }
  }
  RunAll(done);
  return out;
}

void GroupCoordinator::Tick() {
  Done done;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stopped_) return;
    int64_t now = Now();
    ExpireAllDue(now, done);
    if (now >= next_retention_check_ms_) {
      ExpireOffsets(now);
      next_retention_check_ms_ = now + config_.offsets_retention_check_interval_ms;
    }
    MaybeCompact();
    if (log_) {
      Status st = log_->FinishRewrite();
      if (!st.ok()) {
        HR_LOG(kWarn) << "group log compaction: " << st.ToString();
      }
    }
  }
  RunAll(done);
}

void GroupCoordinator::TimerLoop() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stopped_) {
    timer_cv_.wait_for(l, std::chrono::milliseconds(config_.timer_interval_ms));
    if (stopped_) break;
    l.unlock();
    Tick();
    l.lock();
  }
}

void GroupCoordinator::Stop() {
  Done done;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stopped_) return;
    stopped_ = true;
    for (auto& [gid, g] : groups_) {
      for (auto& [id, m] : g.members) {
        if (m.awaiting_join) {
          JoinResult r;
          r.error = KafkaError::kCoordinatorNotAvailable;
          r.member_id = id;
          done.push_back([cb = std::move(m.awaiting_join), r]() { cb(r); });
          m.awaiting_join = nullptr;
        }
        if (m.awaiting_sync) {
          SyncResult r;
          r.error = KafkaError::kCoordinatorNotAvailable;
          done.push_back([cb = std::move(m.awaiting_sync), r]() { cb(r); });
          m.awaiting_sync = nullptr;
        }
      }
    }
    if (log_) {
      Status st = log_->Close();
      if (!st.ok()) { HR_LOG(kWarn) << "group log close: " << st.ToString(); }
      log_.reset();
    }
  }
  timer_cv_.notify_all();
  if (timer_.joinable()) timer_.join();
  RunAll(done);
}

}  // namespace headrace::broker::group
