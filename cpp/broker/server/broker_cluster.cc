// BrokerImpl: what the control plane (python/headrace/cluster) calls in
// cluster mode: applying the cluster state, ISR changes, offline replicas,
// control requests.
#include "broker/server/broker_impl.h"

#include <algorithm>

#include "broker/replication/cluster_apply.h"
#include "broker/security/quota/cluster_quotas.h"
#include "broker/coordinator/group/group_config_store.h"
#include "broker/replication/isr_changes.h"
#include "common/logging.h"

namespace headrace {

Status BrokerImpl::ApplyClusterState(const std::string& state_json,
                                     std::vector<std::string>* report) {
  std::lock_guard<std::timed_mutex> l(mu_);  // one apply at a time, never during Start/Stop
  broker::ClusterState* cluster = state_ ? state_->cluster() : nullptr;
  if (cluster == nullptr) {
    return Status::Unsupported("apply_cluster: the broker is not started in cluster mode");
  }
  HR_ASSIGN_OR_RETURN(std::shared_ptr<const broker::ClusterView> view,
                      broker::ParseClusterView(state_json));
  // No replica swap (LogDirMover) between the roles and the fetchers' set.
  std::unique_lock<std::mutex> roles(state_->topics().roles_mutex());
  broker::ApplyReport applied =
      broker::ApplyClusterView(state_->topics(), *view, config_.node_id, &cluster->seen_topics());
  // Published after the roles changed: a client sent here as the leader
  // finds a leader.
  cluster->Publish(view);
  if (Status st = broker::sasl::ApplyClusterScramCredentials(state_json, *scram_store_);
      !st.ok()) {
    HR_LOG(kWarn) << "cluster state: SCRAM credentials: " << st.message();
  }
  if (view->acls) ApplyClusterAcls(*view->acls);  // ACLs from ZooKeeper
  if (view->broker_configs) {  // dynamic broker configs from ZooKeeper
    state_->dynamic_config().ApplyFromCluster(
        {view->broker_configs->first, view->broker_configs->second});
  }
  if (client_quotas_) broker::quota::ApplyClusterQuotas(state_json, client_quotas_.get());
  if (group_configs_) broker::group::ApplyClusterGroupConfigs(state_json, group_configs_.get());
  const size_t following = applied.follow.size();
  fetchers_->SetBrokerEpoch(view->local_broker_epoch);
  fetchers_->SetFollowed(std::move(applied.follow));
  roles.unlock();
  FollowCoordinatorLeadershipLocked();
  if (applied.became_leader + applied.became_follower + applied.isr_updates > 0) {
    HR_LOG(kInfo) << "cluster state applied: leader of " << applied.became_leader
                  << " more partition(s), follower of " << applied.became_follower
                  << ", " << applied.isr_updates << " ISR update(s); following "
                  << following << " partition(s)";
  }
  for (const std::string& e : applied.errors) HR_LOG(kWarn) << "cluster state: " << e;
  if (report) *report = std::move(applied.errors);
  return Status::OK();
}

std::string BrokerImpl::TakeIsrChanges() {
  std::lock_guard<std::timed_mutex> l(mu_);
  broker::ClusterState* cluster = state_ ? state_->cluster() : nullptr;
  if (cluster == nullptr) return "[]";
  cluster->requests().ExpireOverdue();  // the control plane polls this often
  auto changes = broker::replication::CollectIsrChanges(
      state_->topics().AllPartitions(), broker::Partition::SteadyNowMs(),
      config_.replica_lag_time_max_ms);
  broker::json::Array out;
  for (const auto& c : changes) {
    broker::json::Array isr;
    for (int32_t id : c.isr) isr.push_back(broker::json::Value(id));
    broker::json::Object epochs;  // {"<broker id>": epoch of its last fetch}
    for (const auto& [id, e] : c.broker_epochs) epochs.emplace(std::to_string(id), e);
    out.push_back(broker::json::Value(broker::json::Object{
        {"topic", c.topic}, {"partition", c.partition}, {"leader_epoch", c.leader_epoch},
        {"isr", broker::json::Value(std::move(isr))},
        {"broker_epochs", broker::json::Value(std::move(epochs))}}));
    HR_LOG(kInfo) << "ISR change proposed for " << c.topic << "-" << c.partition
                  << " at leader epoch " << c.leader_epoch << ": " << broker::IdList(c.isr);
  }
  return broker::json::Write(broker::json::Value(std::move(out)));
}

std::string BrokerImpl::OfflineReplicas() {
  std::lock_guard<std::timed_mutex> l(mu_);
  if (!state_) return "[]";
  std::vector<std::pair<std::string, int32_t>> offline;
  for (const auto& p : state_->topics().AllPartitions()) {
    if (p->offline()) offline.emplace_back(p->topic(), p->partition());
  }
  std::sort(offline.begin(), offline.end());
  broker::json::Array out;
  for (const auto& [topic, partition] : offline) {
    out.push_back(broker::json::Value(
        broker::json::Object{{"topic", topic}, {"partition", partition}}));
  }
  return broker::json::Write(broker::json::Value(std::move(out)));
}

bool BrokerImpl::NextControlRequest(int64_t timeout_ms, uint64_t* id, std::string* kind,
                                    std::string* payload) {
  broker::ClusterState* cluster = ClusterOrNull();
  if (cluster == nullptr) return false;
  auto taken = cluster->requests().Next(std::chrono::milliseconds(timeout_ms));
  if (!taken) return false;
  *id = taken->id;
  *kind = std::move(taken->kind);
  *payload = std::move(taken->payload);
  return true;
}

bool BrokerImpl::CompleteControlRequest(uint64_t id, const std::string& result_json) {
  broker::ClusterState* cluster = ClusterOrNull();
  return cluster != nullptr && cluster->requests().Complete(id, result_json);
}

broker::ClusterState* BrokerImpl::ClusterOrNull() {
  std::lock_guard<std::timed_mutex> l(mu_);
  return state_ ? state_->cluster() : nullptr;
}

}  // namespace headrace
