// Broker: BrokerState (topics, logs, background threads) + Dispatcher (the
// Kafka API handlers) + net::Server, started and stopped in that order.
#include "broker/server/broker_impl.h"

#include <cstdlib>

#include "broker/server/metrics_render.h"
#include "broker/security/sasl/kerberos_config.h"
#include "broker/partition/topic_name.h"
#include "common/fault_injecting_env.h"
#include "common/logging.h"

namespace headrace {
namespace {

using broker::BrokerConfig;

// Settings that belong to this layer rather than to BrokerConfig.
constexpr const char* kBackendKey = "headrace.network.backend";  // auto|io_uring|epoll
// Testing hook (docs/configuration.md): fault rules (ParseFaultRules) for a
// FaultInjectingEnv under every file the broker writes. Read once by Create.
constexpr const char* kFaultInjectVar = "HEADRACE_FAULT_INJECT";

// The FaultInjectingEnv HEADRACE_FAULT_INJECT asks for; null when unset.
Result<std::unique_ptr<FaultInjectingEnv>> FaultEnvFromEnvironment() {
  const char* spec = std::getenv(kFaultInjectVar);
  if (spec == nullptr || *spec == '\0') return std::unique_ptr<FaultInjectingEnv>();
  auto rules = ParseFaultRules(spec);
  if (!rules.ok())
    return Status::InvalidArgument(std::string(kFaultInjectVar) + ": " + rules.status().message());
  auto env = std::make_unique<FaultInjectingEnv>(FileEnv::Default());
  for (FaultRule& r : *rules) {
    HR_LOG(kWarn) << kFaultInjectVar << ": testing hook active, injecting " << FaultRuleToString(r);
    env->AddRule(std::move(r));
  }
  return env;
}

}  // namespace

BrokerImpl::BrokerImpl(BrokerConfig config, broker::group::GroupConfig group_config,
                       broker::txn::TxnConfig txn_config,
                       broker::fetch::FetchSessionConfig fetch_config,
                       broker::CleanerConfig cleaner_config, broker::MetricsConfig metrics_config,
                       broker::SslConfig ssl_config, broker::auth::AuthorizerConfig auth_config,
                       broker::quota::QuotaConfig quota_config, net::Backend backend,
                       std::unique_ptr<FileEnv> file_env)
    : file_env_(std::move(file_env)),
      config_(std::move(config)),
      group_config_(group_config),
      txn_config_(txn_config),
      fetch_config_(fetch_config),
      cleaner_config_(cleaner_config),
      metrics_config_(std::move(metrics_config)),
      ssl_config_(std::move(ssl_config)),
      quota_config_(quota_config),
      authorizer_(std::move(auth_config)),
      backend_(backend) {
  config_.file_env = file_env_.get();
}

Status BrokerImpl::Start() {
  std::lock_guard<std::timed_mutex> l(mu_);
  if (state_) return Status::InvalidArgument("broker already started");
  stopping_ = false;
  HR_ASSIGN_OR_RETURN(scram_store_,  // SASL's SCRAM users (docs/security.md)
                      broker::sasl::ScramCredentialStore::Open(config_.data_dir, file_env_.get()));
  sasl_->AttachCredentials(scram_store_.get());
  ctx_.sasl = sasl_.get();
  HR_ASSIGN_OR_RETURN(state_, broker::BrokerState::Open(config_, nullptr, metrics()));
  ctx_.state = state_.get();
  ctx_.group_config = &group_config_;
  ctx_.txn_config = &txn_config_;
  fetch_sessions_ = std::make_unique<broker::fetch::FetchSessionCache>(fetch_config_.cache_slots);
  ctx_.fetch_sessions = fetch_sessions_.get();
  share_partitions_ = std::make_unique<broker::share::ShareRegistry>();
  ctx_.share_partitions = share_partitions_.get();
  share_sessions_ = std::make_unique<broker::share::ShareSessionCache>(
      group_config_.share_max_share_sessions, group_config_.share_session_timeout_ms);
  ctx_.share_sessions = share_sessions_.get();
  if (Status st = OpenAcls(); !st.ok()) return AbandonStart(st);
  if (Status q = OpenClientQuotas(); !q.ok()) return AbandonStart(q);
  markers_ = std::make_unique<broker::LocalTxnMarkerWriter>(
      ctx_, std::make_shared<broker::SerialExecutor>("hr-txn-markers"));
  cluster_markers_ = std::make_unique<broker::ClusterTxnMarkerWriter>(ctx_, markers_.get());
  StartReplicationQuotas();
  if (config_.cluster_mode()) {
    auto fetcher_config = broker::replication::ReplicaFetcherConfig::FromBrokerConfig(config_);
    fetcher_config.follower_quota = &replication_quotas_->follower;
    fetcher_config.security = ctx_.inter_broker_security;
    if (ctx_.inter_broker_security) {
      HR_LOG(kInfo) << "inter-broker connections: listener "
                    << ctx_.inter_broker_security->listener << ", "
                    << ctx_.inter_broker_security->Describe();
    }
    fetchers_ = std::make_unique<broker::replication::ReplicaFetcherManager>(config_.node_id,
                                                                             fetcher_config);
    // AlterReplicaLogDirs: a followed replica swapped for its copy in
    // another log directory is fetched into the copy.
    state_->topics().SetReplicaSwapHook(
        [f = fetchers_.get()](const broker::Partition* old,
                              const std::shared_ptr<broker::Partition>& now) {
          f->ReplacePartition(old, now);
        });
    // ... and the coordinators of a moved internal partition move to the
    // copy (CoordinatorLeadership reloads them from it).
    state_->topics().SetReplicaMovedHook([this](const broker::TopicPartition& tp) {
      if (broker::IsInternalTopic(tp.topic)) FollowCoordinatorsAfterMove();
    });
  }
  // Single node: one coordinator for every group (one partition); cluster
  // mode: one per __consumer_offsets partition led here, ticked by the
  // router's one timer (FollowCoordinatorLeadershipLocked).
  group_coordinators_ = std::make_unique<broker::group::GroupCoordinators>(
      config_.cluster_mode() ? broker::KafkaError::kNotCoordinator
                             : broker::KafkaError::kCoordinatorNotAvailable);
  ctx_.group_coordinators = group_coordinators_.get();
  group_leadership_ = std::make_unique<GroupLeadership>(
      "group coordinator", broker::kConsumerOffsetsTopic, group_coordinators_.get());
  if (config_.cluster_mode()) group_coordinators_->StartTimer(group_config_.timer_interval_ms);
  // The same for transactions: one coordinator per __transaction_state
  // partition led here, sharing one timer and one persist executor.
  txn_coordinators_ = std::make_unique<broker::txn::TxnCoordinators>(
      config_.cluster_mode() ? broker::KafkaError::kNotCoordinator
                             : broker::KafkaError::kCoordinatorNotAvailable);
  ctx_.txn_coordinators = txn_coordinators_.get();
  txn_leadership_ = std::make_unique<TxnLeadership>(
      "transaction coordinator", broker::kTransactionStateTopic, txn_coordinators_.get());
  if (config_.cluster_mode()) {
    txn_executor_ = std::make_shared<broker::SerialExecutor>("hr-txn-persist");
    txn_coordinators_->StartTimer(broker::txn::kTxnTimerPeriodMs);
  }
  // And share-partitions' state (KIP-932): one share coordinator per
  // __share_group_state partition led here.
  share_coordinators_ = std::make_unique<broker::share::ShareCoordinators>(
      config_.cluster_mode() ? broker::KafkaError::kNotCoordinator
                             : broker::KafkaError::kCoordinatorNotAvailable);
  ctx_.share_coordinators = share_coordinators_.get();
  share_leadership_ = std::make_unique<ShareLeadership>(
      "share coordinator", broker::kShareGroupStateTopic, share_coordinators_.get());
  if (config_.cluster_mode()) {
    share_state_client_ = std::make_unique<broker::ShareStateClient>(ctx_);
    ctx_.share_state_client = share_state_client_.get();
  }
  if (!config_.cluster_mode()) {
    auto groups = OpenGroupCoordinator(nullptr);
    if (!groups.ok()) return AbandonStart(groups.status());
    group_coordinators_->SetPartitionCount(1);
    group_coordinators_->Set(0, std::move(groups).value());
    auto txns = OpenTxnCoordinator(nullptr);
    if (!txns.ok()) return AbandonStart(txns.status());
    txn_coordinators_->SetPartitionCount(1);
    txn_coordinators_->Set(0, std::move(txns).value());
    auto shares = OpenShareCoordinator(nullptr);
    if (!shares.ok()) return AbandonStart(shares.status());
    share_coordinators_->SetPartitionCount(1);
    share_coordinators_->Set(0, std::move(shares).value());
    RegisterInternalTopics();
  }
  ctx_.node_id = config_.node_id;
  ctx_.advertised_host = config_.effective_advertised_host();
  ctx_.advertised_port = config_.effective_advertised_port();
  dispatcher_ = std::make_unique<broker::Dispatcher>(&ctx_, metrics());

  Status st = BuildTlsContexts();
  if (st.ok()) {
    server_ = std::make_unique<net::Server>(ServerOptions(), dispatcher_.get());
    st = server_->Start();
  }
  if (!st.ok()) return AbandonStart(st);
  broker::TopicRegistry* registry = &state_->topics();
  cleaner_ = std::make_unique<broker::LogCleaner>(
      cleaner_config_, [registry] { return registry->AllPartitions(); });
  cleaner_->Start();
  // Listening on port 0: advertise the port the OS picked.
  if (config_.advertised_listeners.empty()) ctx_.advertised_port = server_->port();
  bound_ports_ = server_->ports();
  FollowAdvertisedListeners();
  if (config_.cluster_mode()) StartGroupMetadataMigration();
  return Status::OK();
}

Status BrokerImpl::AbandonStart(Status why) {
  server_.reset();
  StopShareCoordinator();
  StopTxnCoordinator();
  StopGroupCoordinator();
  (void)state_->Close();
  state_.reset();
  return why;
}

Status BrokerImpl::Stop() {
  stopping_ = true;  // before mu_: FollowCoordinatorsAfterMove gives up
  std::lock_guard<std::timed_mutex> l(mu_);
  if (!state_) return Status::OK();
  group_migration_.reset();  // stops its OffsetCommits; the log stays for the next start
  // Followers stop appending before anything below closes.
  if (fetchers_) fetchers_->Shutdown();
  if (cleaner_) cleaner_->Stop();  // a pass in progress is abandoned, its log untouched
  // Commit what is flushed-but-unanswered and answer every parked request
  // now (fetches re-read and reply) so the server's drain below does not
  // wait out their deadlines.
  state_->StopWaiting();
  if (share_state_client_) share_state_client_->Stop();  // answers its queued calls
  StopShareCoordinator();
  StopTxnCoordinator();
  cluster_markers_->Stop();  // after the coordinator: nothing sends markers any more
  StopGroupCoordinator();  // answers parked JoinGroup/SyncGroup, closes the group log
  server_->Stop();  // finishes in-flight requests
  Status st = state_->Close();  // answers parked requests, flushes, closes logs
  server_.reset();
  dispatcher_.reset();
  fetchers_.reset();
  cleaner_.reset();
  state_.reset();
  return st;
}

std::string BrokerImpl::MetricsText() {
  std::unique_lock<std::timed_mutex> l(mu_, kObserveWait);
  if (!l.owns_lock() || !state_ || !server_) return "";
  broker::ServerGauges server{server_->active_connections(), server_->connection_totals(),
                              server_->stall_totals()};
  return broker::RenderMetrics(ctx_, metrics(), server);
}

std::string BrokerImpl::ReadinessProblem() {
  {
    std::unique_lock<std::timed_mutex> l(mu_, kObserveWait);
    if (!l.owns_lock()) return "not serving: the broker is starting or stopping";
    if (!state_ || !server_) return "not serving: the broker is not started";
    broker::ClusterState* cluster = state_->cluster();
    if (cluster != nullptr && !cluster->applied())
      return "not serving yet: waiting for the cluster's state";
  }
  FileEnv& env = config_.file_env ? *config_.file_env : *FileEnv::Default();
  return data_dir_probe_.Problem(env, {config_.data_dir});
}

Result<std::unique_ptr<Broker>> Broker::Create(const std::map<std::string, std::string>& settings) {
  std::map<std::string, std::string> props = settings;
  net::Backend backend = net::Backend::kAuto;
  if (auto it = props.find(kBackendKey); it != props.end()) {
    auto b = net::ParseBackend(it->second);
    if (!b.ok()) return Status::InvalidArgument(std::string(kBackendKey) + ": " + b.status().message());
    backend = *b;
    props.erase(it);
  }
  broker::group::GroupConfig group_config;  // takes the group.* / offsets.* keys
  HR_RETURN_IF_ERROR(group_config.Extract(props));
  broker::txn::TxnConfig txn_config;  // takes the transaction.* keys
  HR_RETURN_IF_ERROR(txn_config.Extract(props));
  broker::fetch::FetchSessionConfig fetch_config;  // max.incremental.fetch.session.cache.slots
  HR_RETURN_IF_ERROR(fetch_config.Extract(props));
  broker::CleanerConfig cleaner_config;  // takes the log.cleaner.* keys
  HR_RETURN_IF_ERROR(cleaner_config.Extract(props));
  broker::MetricsConfig metrics_config;  // headrace.http.listen, headrace.metrics.enable
  HR_RETURN_IF_ERROR(metrics_config.Extract(props));
  // Replication throttles: checked here, built in Start with the dynamic layers.
  HR_RETURN_IF_ERROR(broker::replication::ReplicationQuotaConfig().Extract(props));
  broker::sasl::SaslConfig sasl_config;  // sasl.*, connections.max.reauth.ms, listener.name.*.sasl...
  HR_RETURN_IF_ERROR(sasl_config.Extract(props));
  // sasl.kerberos.*: accepted as Kafka does, no effect (no GSSAPI).
  HR_RETURN_IF_ERROR(broker::sasl::KerberosConfig().Extract(props));
  broker::SslConfig ssl_config;  // ssl.*, listener.name.*.ssl.*
  HR_RETURN_IF_ERROR(ssl_config.Extract(props));
  broker::auth::AuthorizerConfig auth_config;  // authorizer.class.name, super.users, ...
  HR_RETURN_IF_ERROR(auth_config.Extract(props));
  broker::quota::QuotaConfig quota_config;  // quota.window.*
  HR_RETURN_IF_ERROR(quota_config.Extract(props));
  BrokerConfig config;
  HR_RETURN_IF_ERROR(config.SetAll(props));
  HR_RETURN_IF_ERROR(config.Validate());
  for (const broker::Listener& l : config.listeners) {  // a TLS listener's keys are complete
    net::SecurityProtocol p = config.protocol_of(l);
    if (p == net::SecurityProtocol::kSsl || p == net::SecurityProtocol::kSaslSsl) {
      HR_RETURN_IF_ERROR(ssl_config.TlsSettingsFor(l.name).status());
    }
  }
  config.start_properties = settings;  // DescribeConfigs describes every family from it
  std::vector<std::string> sasl_listeners;
  for (const broker::Listener& l : config.listeners) {
    net::SecurityProtocol p = config.protocol_of(l);
    if (p == net::SecurityProtocol::kSaslPlaintext || p == net::SecurityProtocol::kSaslSsl)
      sasl_listeners.push_back(l.name);
  }
  HR_ASSIGN_OR_RETURN(auto sasl, broker::sasl::SaslServer::Create(sasl_config, sasl_listeners));
  std::shared_ptr<const broker::replication::InterBrokerSecurity> inter_broker;
  if (config.cluster_mode()) {  // docs/security.md "Inter-broker security"
    HR_ASSIGN_OR_RETURN(inter_broker, broker::replication::InterBrokerSecurity::Build(
                                          config, ssl_config, sasl_config));
  }
  HR_ASSIGN_OR_RETURN(std::unique_ptr<FaultInjectingEnv> fault_env, FaultEnvFromEnvironment());
  auto impl = std::make_unique<BrokerImpl>(
      std::move(config), group_config, txn_config, fetch_config, cleaner_config,
      std::move(metrics_config), std::move(ssl_config), std::move(auth_config), quota_config,
      backend, std::move(fault_env));
  impl->SetSasl(std::move(sasl));
  impl->SetInterBrokerSecurity(std::move(inter_broker));
  return std::unique_ptr<Broker>(std::move(impl));
}

}  // namespace headrace
