#include "broker/api/share_state.h"

#include <atomic>

#include "broker/api/cluster_lookup.h"
#include "broker/api/share_state_client.h"
#include "broker/coordinator/base/group_partition.h"
#include "broker/coordinator/group/group_config.h"
#include "broker/coordinator/share/share_coordinators.h"
#include "common/logging.h"

namespace headrace::broker {

void SharePending::Complete(KafkaError e) {
  std::vector<std::function<void(KafkaError)>> then;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_) return;
    done_ = true;
    error_ = e;
    then.swap(then_);
  }
  for (auto& fn : then) fn(e);
}

void SharePending::Then(std::function<void(KafkaError)> fn) {
  KafkaError e;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!done_) {
      then_.push_back(std::move(fn));
      return;
    }
    e = error_;
  }
  fn(e);
}

void WhenShareStateDone(BrokerContext& ctx, ShareWaits waits,
                        std::shared_ptr<net::LoopExecutor> executor,
                        std::function<void(KafkaError)> done) {
  struct Join {
    std::mutex mu;
    size_t outstanding = 0;
    KafkaError first = KafkaError::kNone;
    std::function<void(KafkaError)> done;
    std::shared_ptr<net::LoopExecutor> executor;
    void Report(KafkaError e) {
      std::function<void(KafkaError)> fn;
      KafkaError result;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (first == KafkaError::kNone) first = e;
        if (--outstanding > 0) return;
        fn = std::move(done);
        result = first;
      }
      if (executor) {
        executor->Post([fn = std::move(fn), result] { fn(result); });
      } else {
        fn(result);
      }
    }
  };
  auto join = std::make_shared<Join>();
  join->outstanding = 1 + waits.remote.size();
  join->done = std::move(done);
  join->executor = std::move(executor);
  for (const auto& pending : waits.remote) {
    pending->Then([join](KafkaError e) { join->Report(e); });
  }
  WhenLogsCommitted(ctx, std::move(waits.local), nullptr,
                    [join](KafkaError e) { join->Report(e); });
}

namespace {

// Kafka's answer to a read of a share-partition never initialized
// (api/read_share_group_state.cc).
constexpr KafkaError kNoStoredState = KafkaError::kInvalidRequest;

// Where the share coordinator of a key runs, as this broker sees it now.
struct Where {
  enum Kind { kMemory, kLocal, kRemote, kUnavailable } kind = kMemory;
  std::shared_ptr<share::ShareCoordinator> local;
  int32_t broker = -1;
};

// Cluster mode: asks for __share_group_state once it is needed (as
// FindCoordinator does for the other coordinators' topics).
void EnsureShareStateTopic(BrokerContext& ctx) {
  ClusterState* cluster = ctx.state->cluster();
  if (cluster == nullptr || cluster->view()->brokers.empty() || ctx.group_config == nullptr) return;
  const group::GroupConfig& g = *ctx.group_config;
  RequestTopicCreation(ctx, kShareGroupStateTopic, g.share_state_topic_num_partitions,
                       g.share_state_topic_replication_factor,
                       {{"cleanup.policy", "compact"},
                        {"min.insync.replicas", std::to_string(g.share_state_topic_min_isr)},
                        {"segment.bytes", std::to_string(g.log_segment_bytes)}});
}

Where Locate(BrokerContext& ctx, const share::SharePartitionKey& key) {
  Where w;
  if (ctx.share_coordinators == nullptr) return w;
  const std::string ckey = share::ShareCoordinatorKey(key);
  ClusterState* cluster = ctx.state->cluster();
  if (cluster == nullptr) {
    w.local = ctx.share_coordinators->For(ckey).coordinator;
    w.kind = w.local ? Where::kLocal : Where::kUnavailable;
    return w;
  }
  auto view = cluster->view();
  const TopicView* t = view->FindTopic(kShareGroupStateTopic);
  if (t == nullptr || t->partitions.empty()) {
    EnsureShareStateTopic(ctx);
    w.kind = Where::kUnavailable;
    return w;
  }
  const int32_t p = group::GroupPartition(ckey, static_cast<int32_t>(t->partitions.size()));
  const int32_t leader = t->partitions[p].leader;
  if (leader < 0 || view->FindBroker(leader) == nullptr) {
    w.kind = Where::kUnavailable;
  } else if (leader == ctx.node_id) {
    w.local = ctx.share_coordinators->ForPartition(p);  // null while it loads
    w.kind = w.local ? Where::kLocal : Where::kUnavailable;
  } else if (ctx.share_state_client != nullptr) {
    w.kind = Where::kRemote;
    w.broker = leader;
  } else {
    w.kind = Where::kUnavailable;
  }
  return w;
}

ShareStatePersist Outcome(const share::ShareCoordinator& c, share::SharePersisted p,
                          const share::SharePartitionKey& key) {
  if (p.error == KafkaError::kNone) {
    return {KafkaError::kNone, LogCommitPoint{c.log_partition(), Offset(p.end)}, nullptr};
  }
  HR_LOG(kWarn) << "share state of " << share::ShareCoordinatorKey(key)
                << " not written: " << KafkaErrorName(p.error);
  const bool fenced = p.error == KafkaError::kFencedStateEpoch ||
                      p.error == KafkaError::kFencedLeaderEpoch;
  return {fenced ? p.error : KafkaError::kKafkaStorageError, std::nullopt, nullptr};
}

// Installs a loaded state (REQUIRES: entry.mu held). Batches the share
// partition cannot hold (acquired, below the start) are dropped.
void Install(share::ShareRegistry::Entry& entry, const share::SharePartitionConfig& config,
             const share::ShareState& s, int32_t leader_epoch) {
  std::vector<share::StateBatch> batches;
  for (const share::StateBatch& b : s.batches) {
    if (b.state != share::RecordState::kAcquired && b.first <= b.last) batches.push_back(b);
  }
  entry.state.emplace(config, s.start_offset,
                      share::MergeStateBatches({}, batches, s.start_offset));
  entry.state_epoch = s.state_epoch;
  entry.leader_epoch = leader_epoch;
}

// A remote load's end: installs `state`, or (nullopt) lets the next fetch
// try again.
void FinishLoad(const std::weak_ptr<share::ShareRegistry::Entry>& weak,
                const share::SharePartitionConfig& config, int32_t leader_epoch,
                const std::optional<share::ShareState>& state) {
  std::shared_ptr<share::ShareRegistry::Entry> entry = weak.lock();
  if (!entry) return;
  std::lock_guard<std::mutex> lock(entry->mu);
  if (entry->loading_epoch != leader_epoch) return;  // superseded
  entry->loading_epoch = -1;
  if (state && !entry->state) Install(*entry, config, *state, leader_epoch);
}

void StartRemoteLoad(BrokerContext& ctx, int32_t broker, const share::SharePartitionKey& key,
                     const std::shared_ptr<share::ShareRegistry::Entry>& entry,
                     const share::SharePartitionConfig& config, int32_t leader_epoch,
                     int64_t start) {
  ShareStateClient* client = ctx.share_state_client;
  std::weak_ptr<share::ShareRegistry::Entry> weak = entry;
  const bool accepted = client->Read(broker, key, leader_epoch,
               [client, broker, key, weak, config, leader_epoch, start](
                   KafkaError e, std::optional<share::ShareState> state) {
                 if (e == KafkaError::kNone) return FinishLoad(weak, config, leader_epoch, state);
                 if (e != kNoStoredState) {
                   HR_LOG(kInfo) << "share state of " << share::ShareCoordinatorKey(key)
                                 << " not read from broker " << broker << ": "
                                 << KafkaErrorName(e) << " (retried)";
                   return FinishLoad(weak, config, leader_epoch, std::nullopt);
                 }
                 const bool init = client->Initialize(
                     broker, key, /*state_epoch=*/0, start,
                     [weak, config, leader_epoch, start](KafkaError ie) {
                       std::optional<share::ShareState> s;
                       if (ie == KafkaError::kNone) {
                         s.emplace();
                         s->start_offset = start;
                       }
                       FinishLoad(weak, config, leader_epoch, s);
                     });
                 if (!init) FinishLoad(weak, config, leader_epoch, std::nullopt);  // stopping
               });
  if (!accepted) entry->loading_epoch = -1;  // stopping; REQUIRES: entry->mu held
}

}  // namespace

ShareLoad EnsureSharePartition(BrokerContext& ctx, const share::SharePartitionKey& key,
                               const std::shared_ptr<share::ShareRegistry::Entry>& entry,
                               const share::SharePartitionConfig& config, int32_t leader_epoch,
                               bool revalidate, const std::function<int64_t()>& start_offset,
                               ShareStatePersist* persist) {
  if (entry->state && entry->leader_epoch == leader_epoch) {
    const bool idle = entry->state->acquired_now() == 0 && entry->writes_in_flight == 0;
    if (!revalidate || !idle || Locate(ctx, key).kind == Where::kMemory) return ShareLoad::kReady;
  }
  entry->state.reset();  // none yet, or loaded under another leadership: read again
  const Where w = Locate(ctx, key);
  switch (w.kind) {
    case Where::kMemory: {
      share::ShareState fresh;
      fresh.start_offset = start_offset();
      Install(*entry, config, fresh, leader_epoch);
      return ShareLoad::kReady;
    }
    case Where::kLocal: {
      if (std::optional<share::ShareState> stored = w.local->Read(key)) {
        Install(*entry, config, *stored, leader_epoch);
        return ShareLoad::kReady;
      }
      share::ShareState fresh;
      fresh.start_offset = start_offset();
      *persist = Outcome(*w.local, w.local->Initialize(key, 0, fresh.start_offset, leader_epoch),
                         key);
      if (persist->error != KafkaError::kNone) return ShareLoad::kLoading;
      Install(*entry, config, fresh, leader_epoch);
      return ShareLoad::kReady;
    }
    case Where::kRemote:
      if (entry->loading_epoch != leader_epoch) {
        entry->loading_epoch = leader_epoch;
        StartRemoteLoad(ctx, w.broker, key, entry, config, leader_epoch, start_offset());
      }
      return ShareLoad::kLoading;
    case Where::kUnavailable:
      return ShareLoad::kLoading;
  }
  return ShareLoad::kLoading;
}

ShareStatePersist PersistSharePartition(BrokerContext& ctx, const share::SharePartitionKey& key,
                                        const share::ShareRegistry::Entry& entry) {
  if (!entry.state) return {};
  const Where w = Locate(ctx, key);
  share::ShareState write;
  write.state_epoch = entry.state_epoch;
  write.leader_epoch = entry.leader_epoch;
  write.start_offset = entry.state->start_offset();
  write.batches = entry.state->Snapshot();
  switch (w.kind) {
    case Where::kMemory:
      return {};
    case Where::kLocal:
      return Outcome(*w.local, w.local->Write(key, write), key);
    case Where::kRemote: {
      auto pending = std::make_shared<SharePending>();
      if (!ctx.share_state_client->Write(w.broker, key, write,
                                         [pending](KafkaError e) { pending->Complete(e); })) {
        return {KafkaError::kRequestTimedOut, std::nullopt, nullptr};  // stopping
      }
      return {KafkaError::kNone, std::nullopt, pending};
    }
    case Where::kUnavailable:
      break;
  }
  return {KafkaError::kCoordinatorNotAvailable, std::nullopt, nullptr};
}

void ReadShareStateSummary(BrokerContext& ctx, const share::SharePartitionKey& key,
                           std::function<void(ShareStateSummary)> done) {
  const Where w = Locate(ctx, key);
  ShareStateSummary out;
  switch (w.kind) {
    case Where::kMemory:
      if (ctx.share_partitions) {
        if (auto e = ctx.share_partitions->Find(key)) {
          std::lock_guard<std::mutex> lock(e->mu);
          if (e->state) out.start_offset = e->state->start_offset();
        }
      }
      return done(out);
    case Where::kLocal:
      if (std::optional<share::ShareState> s = w.local->Read(key)) {
        out.state_epoch = s->state_epoch;
        out.start_offset = s->start_offset;
        out.leader_epoch = s->leader_epoch;
      }
      return done(out);
    case Where::kRemote:
      if (ctx.share_state_client->ReadSummary(w.broker, key, done)) return;
      out.error = KafkaError::kRequestTimedOut;  // stopping
      return done(out);
    case Where::kUnavailable:
      break;
  }
  out.error = KafkaError::kCoordinatorNotAvailable;
  done(out);
}

namespace {

// Forgets `key`'s share-partition here: read again from the store at the
// next fetch.
void Forget(BrokerContext& ctx, const share::SharePartitionKey& key) {
  if (ctx.share_partitions == nullptr) return;
  if (auto e = ctx.share_partitions->Find(key)) {
    std::lock_guard<std::mutex> lock(e->mu);
    e->state.reset();
    e->loading_epoch = -1;
  }
}

}  // namespace

void ResetShareState(BrokerContext& ctx, const share::SharePartitionKey& key,
                     int64_t start_offset, std::function<void(KafkaError)> done) {
  Forget(ctx, key);
  const Where w = Locate(ctx, key);
  switch (w.kind) {
    case Where::kMemory:
      return done(KafkaError::kNone);  // forgotten: it starts over where reset says
    case Where::kLocal: {
      std::optional<share::ShareState> now = w.local->Read(key);
      const int32_t epoch = now ? now->state_epoch + 1 : 0;
      ShareStatePersist p = Outcome(*w.local, w.local->Initialize(key, epoch, start_offset, -1),
                                    key);
      if (!p.commit) return done(p.error);
      return WhenLogsCommitted(ctx, {*p.commit}, nullptr, std::move(done));
    }
    case Where::kRemote: {
      ShareStateClient* client = ctx.share_state_client;
      const int32_t broker = w.broker;
      const bool accepted = client->ReadSummary(
          broker, key, [client, broker, key, start_offset, done](ShareStateSummary s) {
            if (s.error != KafkaError::kNone) return done(s.error);
            const int32_t epoch = s.start_offset >= 0 ? s.state_epoch + 1 : 0;
            if (!client->Initialize(broker, key, epoch, start_offset, done)) {
              done(KafkaError::kRequestTimedOut);  // stopping
            }
          });
      if (!accepted) done(KafkaError::kRequestTimedOut);
      return;
    }
    case Where::kUnavailable:
      break;
  }
  done(KafkaError::kCoordinatorNotAvailable);
}

void DeleteShareStateOf(BrokerContext& ctx, const share::SharePartitionKey& key,
                        std::function<void(KafkaError)> done) {
  Forget(ctx, key);
  const Where w = Locate(ctx, key);
  switch (w.kind) {
    case Where::kMemory:
      return done(KafkaError::kNone);
    case Where::kLocal: {
      ShareStatePersist p = Outcome(*w.local, w.local->Delete({key}), key);
      if (!p.commit) return done(p.error);
      return WhenLogsCommitted(ctx, {*p.commit}, nullptr, std::move(done));
    }
    case Where::kRemote:
      if (!ctx.share_state_client->Delete(w.broker, key, done)) {
        done(KafkaError::kRequestTimedOut);  // stopping
      }
      return;
    case Where::kUnavailable:
      break;
  }
  done(KafkaError::kCoordinatorNotAvailable);
}

std::vector<LogCommitPoint> DeleteShareState(BrokerContext& ctx, const std::string& group) {
  std::vector<LogCommitPoint> out;
  // The stored state goes first: a share-partition created again meanwhile
  // must not read it back.
  if (ctx.share_coordinators) {
    for (const auto& [partition, c] : ctx.share_coordinators->All()) {
      if (c->StatesOf(group).empty()) continue;
      share::SharePersisted p = c->DeleteGroup(group);
      if (p.error == KafkaError::kNone) {
        out.emplace_back(c->log_partition(), Offset(p.end));
      } else {
        HR_LOG(kWarn) << "share state of group " << group << " not deleted: "
                      << KafkaErrorName(p.error);
      }
    }
  }
  if (ctx.share_partitions) ctx.share_partitions->DropGroup(group);
  return out;
}

}  // namespace headrace::broker
