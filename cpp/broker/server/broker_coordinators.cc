// BrokerImpl: the group and transaction coordinators: their logs, and on
// which broker they run (cluster mode: where their partition is led).
#include "broker/server/broker_impl.h"

#include "broker/partition/topic_name.h"
#include "common/logging.h"

namespace headrace {

broker::PartitionServices BrokerImpl::CoordinatorLogServices() const {
  broker::PartitionServices services;
  services.listener = &state_->purgatory();
  services.flusher = &state_->flusher();
  services.local_broker_id = config_.node_id;
  services.metrics = metrics();
  return services;
}

Result<std::shared_ptr<broker::group::GroupCoordinator>> BrokerImpl::OpenGroupCoordinator(
    std::shared_ptr<broker::Partition> log_partition) {
  broker::group::GroupCoordinator::Options gopts;
  gopts.config = group_config_;
  gopts.data_dir = config_.data_dir;
  gopts.log_services = CoordinatorLogServices();
  gopts.env = config_.file_env;
  // Cluster mode: the router's one timer ticks every coordinator.
  gopts.start_timer = log_partition == nullptr;
  gopts.log_partition = std::move(log_partition);
  // A share member whose session expired gives up its share session and
  // its acquired records on this broker (the partitions it leads; other
  // leaders' locks expire). One that leaves with a share session open here
  // closes it itself (epoch -1, with its last acknowledgements, which may
  // arrive after the leave): its records are released then, not before.
  gopts.share_member_gone = [this](const std::string& group, const std::string& member,
                                   bool expired) {
    if (!share_sessions_ || !share_partitions_) return;
    if (expired) {
      share_sessions_->Remove(group, member);
    } else if (share_sessions_->Contains(group, member)) {
      return;
    }
    share_partitions_->ReleaseMember(group, member);
  };
  gopts.group_configs = [this](const std::string& group) {
    return group_configs_ ? group_configs_->Get(group) : broker::ConfigMap{};
  };
  HR_ASSIGN_OR_RETURN(auto groups, broker::group::GroupCoordinator::Open(std::move(gopts)));
  return std::shared_ptr<broker::group::GroupCoordinator>(std::move(groups));
}

void BrokerImpl::StartGroupMetadataMigration() {
  auto m = broker::GroupMetadataMigration::Start(ctx_, config_.data_dir, config_.file_env,
                                                 group_config_, CoordinatorLogServices());
  if (!m.ok()) {
    HR_LOG(kError) << "group metadata migration: cannot read " << config_.data_dir
                   << "/__group_metadata: " << m.status().ToString();
    return;
  }
  group_migration_ = std::move(m).value();
}

Result<std::shared_ptr<broker::txn::TxnCoordinator>> BrokerImpl::OpenTxnCoordinator(
    std::shared_ptr<broker::Partition> log_partition) {
  broker::txn::TxnCoordinator::Options topts;
  topts.config = txn_config_;
  topts.data_dir = config_.data_dir;
  topts.log_services = CoordinatorLogServices();
  topts.env = config_.file_env;
  // Cluster mode: the router's timer and one executor serve them all.
  topts.start_timer = log_partition == nullptr;
  topts.executor = txn_executor_;
  topts.log_partition = std::move(log_partition);
  topts.purgatory = &state_->purgatory();
  topts.markers = cluster_markers_.get();
  topts.producer_ids = &state_->producer_ids();
  return broker::txn::TxnCoordinator::Open(std::move(topts));
}

Result<std::shared_ptr<broker::share::ShareCoordinator>> BrokerImpl::OpenShareCoordinator(
    std::shared_ptr<broker::Partition> log_partition) {
  broker::share::ShareCoordinator::Options sopts;
  sopts.data_dir = config_.data_dir;
  sopts.env = config_.file_env;
  sopts.log_services = CoordinatorLogServices();
  // Acknowledgements are answered as offset commits are: once fsynced when
  // headrace.offsets.commit.fsync says so.
  sopts.log_services.commit_requires_fsync = group_config_.commit_fsync;
  sopts.segment_bytes = group_config_.log_segment_bytes;
  sopts.log_partition = std::move(log_partition);
  return broker::share::ShareCoordinator::Open(std::move(sopts));
}

void BrokerImpl::RegisterInternalTopics() {
  if (auto groups = group_coordinators_->ForPartition(0)) {
    state_->topics().SetInternalTopic(
        broker::kConsumerOffsetsTopic, groups->log_partition(),
        {{"cleanup.policy", "compact"},
         {"segment.bytes", std::to_string(group_config_.log_segment_bytes)}});
  }
  if (auto txns = txn_coordinators_->ForPartition(0)) {
    state_->topics().SetInternalTopic(
        broker::kTransactionStateTopic, txns->log_partition(),
        {{"cleanup.policy", "compact"},
         {"segment.bytes", std::to_string(txn_config_.log_segment_bytes)}});
  }
  if (auto shares = share_coordinators_->ForPartition(0)) {
    state_->topics().SetInternalTopic(
        broker::kShareGroupStateTopic, shares->log_partition(),
        {{"cleanup.policy", "compact"},
         {"segment.bytes", std::to_string(group_config_.log_segment_bytes)}});
  }
}

void BrokerImpl::FollowCoordinatorsAfterMove() {
  std::unique_lock<std::timed_mutex> l(mu_, std::defer_lock);
  while (!l.try_lock_for(std::chrono::milliseconds(50))) {
    if (stopping_.load()) return;
  }
  if (state_ && state_->cluster()) FollowCoordinatorLeadershipLocked();
}

void BrokerImpl::FollowCoordinatorLeadershipLocked() {
  const auto view = state_->cluster()->view();
  group_leadership_->Follow(*view, state_->topics(), [this](std::shared_ptr<broker::Partition> log) {
    return OpenGroupCoordinator(std::move(log));
  });
  txn_leadership_->Follow(*view, state_->topics(), [this](std::shared_ptr<broker::Partition> log) {
    return OpenTxnCoordinator(std::move(log));
  });
  share_leadership_->Follow(*view, state_->topics(), [this](std::shared_ptr<broker::Partition> log) {
    return OpenShareCoordinator(std::move(log));
  });
}

}  // namespace headrace
