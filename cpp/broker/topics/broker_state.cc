#include "broker/topics/broker_state.h"

#include "broker/storage/hw_checkpoint.h"
#include "common/logging.h"

namespace headrace::broker {

Result<std::unique_ptr<BrokerState>> BrokerState::Open(const BrokerConfig& config,
                                                       LogFactory log_factory,
                                                       BrokerMetrics* metrics) {
  HR_RETURN_IF_ERROR(config.Validate());
  std::unique_ptr<BrokerState> s(new BrokerState());
  FileEnv* env = config.file_env;
  LogDirs::Options dirs;
  dirs.paths = ConfiguredLogDirs(config);
  dirs.env = env;
  HR_ASSIGN_OR_RETURN(s->dirs_, LogDirs::Open(std::move(dirs)));
  HR_ASSIGN_OR_RETURN(s->store_, FileMetadataStore::Open(config.data_dir, env));
  HR_ASSIGN_OR_RETURN(s->producer_ids_, ProducerIdAllocator::Open(config.data_dir, env));
  if (config.cluster_mode()) s->producer_ids_->SetClusterStripe(config.node_id);
  if (!log_factory) {
    log_factory = [env](const std::string& dir, const LogConfig& c) {
      return Log::Open(dir, c, env);
    };
  }
  s->purgatory_ = std::make_unique<Purgatory>();
  // Before the registry, which posts auto-creations to it (destroyed first:
  // declared last).
  s->admin_ = std::make_unique<AdminWorker>();
  Flusher::Options flush;
  flush.linger = std::chrono::microseconds(config.group_commit_linger_us);
  flush.threads = static_cast<int>(config.flush_threads);
  flush.fsync_latency = metrics ? &metrics->fsync_latency : nullptr;
  s->flusher_ = std::make_unique<Flusher>(flush);
  HR_ASSIGN_OR_RETURN(s->dynamic_, DynamicBrokerConfig::Open(config.data_dir, env));
  TopicRegistry::Options options;
  options.config = config;
  options.dynamic_topic_defaults = TopicDefaultLayers(s->dynamic_->layers());
  options.store = s->store_.get();
  options.dirs = s->dirs_.get();
  options.services.listener = s->purgatory_.get();
  options.services.on_offline = s->dirs_->OnPartitionOffline();
  options.services.flusher = s->flusher_.get();
  options.services.commit_requires_fsync = config.acks_all_fsync;
  options.services.follower_write_cache =
      config.follower_uncached_writes ? WriteCache::kDrop : WriteCache::kKeep;
  options.services.local_broker_id = config.node_id;
  options.services.file_env = env;
  options.services.metrics = metrics;
  options.log_factory = std::move(log_factory);
  AdminWorker* admin = s->admin_.get();
  options.post_admin_job = [admin](std::function<void()> job) { admin->Post(std::move(job)); };
  HR_ASSIGN_OR_RETURN(s->registry_, TopicRegistry::Open(std::move(options)));
  Maintenance::Options m;
  m.tick_ms = config.log_flush_scheduler_interval_ms;
  m.retention_check_ms = config.log_retention_check_interval_ms;
  m.producer_id_expiration_ms = config.producer_id_expiration_ms;
  TopicRegistry* registry = s->registry_.get();
  if (config.cluster_mode()) {
    m.hw_checkpoint_ms = config.replica_high_watermark_checkpoint_interval_ms;
    LogDirs* dirs = s->dirs_.get();
    m.checkpoint_hw = [dirs, registry] {
      return CheckpointHighWatermarks(*dirs, registry->AllPartitions());
    };
  }
  s->dynamic_->Subscribe([registry](const DynamicBrokerLayers& layers) {
    auto [cluster_default, per_broker] = TopicDefaultLayers(layers);
    registry->SetDynamicTopicDefaults(cluster_default, per_broker);
  });
  // Offline partitions are left alone: nothing is written to a failed disk.
  s->maintenance_ = std::make_unique<Maintenance>(m, [registry] {
    std::vector<std::shared_ptr<Partition>> all = registry->AllPartitions();
    std::erase_if(all, [](const auto& p) { return p->offline(); });
    return all;
  });
  s->maintenance_->Start();
  if (config.cluster_mode()) s->cluster_ = std::make_unique<ClusterState>();
  s->writers_ =
      std::make_unique<LogWriters>(*s->dirs_, static_cast<int>(config.log_writer_threads));
  return s;
}

BrokerState::~BrokerState() { (void)Close(); }

Status BrokerState::Close() {
  if (closed_) return Status::OK();
  closed_ = true;
  if (admin_) admin_->Stop();  // queued creates/deletes finish first
  if (writers_) writers_->Drain();  // and queued appends
  if (maintenance_) maintenance_->Stop();
  StopWaiting();
  if (!registry_) return Status::OK();
  // Clean shutdown: the HWs as they end (cluster mode; hw_checkpoint.h).
  Status hw;
  if (cluster_ && dirs_) hw = CheckpointHighWatermarks(*dirs_, registry_->AllPartitions());
  if (!hw.ok()) HR_LOG(kError) << "high-watermark checkpoint at shutdown failed: " << hw.ToString();
  return registry_->Close();
}

void BrokerState::StopWaiting() {
  // Flushing first commits what is scheduled, which completes the acks=all
  // produces waiting for it; whatever still waits is then told kShutdown.
  if (flusher_) flusher_->Stop();
  if (purgatory_) purgatory_->Shutdown();
  if (cluster_) cluster_->requests().Shutdown();
}

}  // namespace headrace::broker
