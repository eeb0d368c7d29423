// Broker: BrokerState (topics, logs, background threads) + Dispatcher (the
// Kafka API handlers) + net::Server, started and stopped in that order.
#include "headrace/broker.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>

#include "broker/api/coordinator_leadership.h"
#include "broker/api/dispatcher.h"
#include "broker/api/metrics_render.h"
#include "broker/api/handler.h"
#include "broker/broker_config.h"
#include "broker/data_dir_probe.h"
#include "broker/metrics_config.h"
#include "broker/sasl/kerberos_config.h"
#include "broker/sasl/sasl_server.h"
#include "broker/sasl/scram_store.h"
#include "broker/replication/inter_broker_security.h"
#include "broker/ssl_config.h"
#include "broker/quota/cluster_quotas.h"
#include "broker/quota/quota_manager.h"
#include "broker/cluster/cluster_apply.h"
#include "broker/json.h"
#include "broker/replication/isr_changes.h"
#include "broker/replication/replica_fetcher.h"
#include "broker/replication/replication_quota.h"
#include "broker/fetch/fetch_session.h"
#include "broker/fetch/fetch_session_config.h"
#include "broker/group/group_config.h"
#include "broker/log_cleaner.h"
#include "broker/dynamic_family_config.h"
#include "broker/group/group_coordinator.h"
#include "broker/group/group_coordinators.h"
#include "broker/api/group_metadata_migration.h"
#include "broker/api/txn_marker_cluster.h"
#include "broker/api/txn_marker_local.h"
#include "broker/auth/acl_store.h"
#include "broker/auth/authorizer.h"
#include "broker/serial_executor.h"
#include "broker/topic_name.h"
#include "broker/txn/txn_coordinators.h"
#include "common/fault_injecting_env.h"
#include "common/logging.h"
#include "net/server.h"
#include "net/tls_context.h"

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


class BrokerImpl final : public Broker {
 public:
  BrokerImpl(BrokerConfig config, broker::group::GroupConfig group_config,
             broker::txn::TxnConfig txn_config, broker::fetch::FetchSessionConfig fetch_config,
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
  ~BrokerImpl() override { (void)Stop(); }
  void SetSasl(std::unique_ptr<broker::sasl::SaslServer> sasl) { sasl_ = std::move(sasl); }
  void SetInterBrokerSecurity(std::shared_ptr<const broker::replication::InterBrokerSecurity> s) {
    ctx_.inter_broker_security = std::move(s);
  }

  Status Start() override {
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
    if (Status st = OpenAcls(); !st.ok()) {
      (void)state_->Close();
      state_.reset();
      return st;
    }
    if (Status q = OpenClientQuotas(); !q.ok()) {
      (void)state_->Close();
      state_.reset();
      return q;
    }
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
    if (!config_.cluster_mode()) {
      auto groups = OpenGroupCoordinator(nullptr);
      if (!groups.ok()) {
        StopGroupCoordinator();
        (void)state_->Close();
        state_.reset();
        return groups.status();
      }
      group_coordinators_->SetPartitionCount(1);
      group_coordinators_->Set(0, std::move(groups).value());
      auto txns = OpenTxnCoordinator(nullptr);
      if (!txns.ok()) {
        StopGroupCoordinator();
        (void)state_->Close();
        state_.reset();
        return txns.status();
      }
      txn_coordinators_->SetPartitionCount(1);
      txn_coordinators_->Set(0, std::move(txns).value());
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
    if (!st.ok()) {
      server_.reset();
      StopTxnCoordinator();
      StopGroupCoordinator();
      (void)state_->Close();
      state_.reset();
      return st;
    }
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

  Status Stop() override {
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

  std::string listen_address() const override {
    const broker::Listener& first = config_.listeners.front();
    int port = server_ ? server_->port() : first.port;
    return first.host + ":" + std::to_string(port);
  }
  std::string advertised_address() const override {
    if (config_.cluster_mode() && server_) {  // what the other brokers connect to
      std::string host;
      int32_t port = 0;
      ctx_.AdvertisedFor(config_.inter_broker_listener(), &host, &port);
      return host + ":" + std::to_string(port);
    }
    return ctx_.advertised_host + ":" + std::to_string(ctx_.advertised_port.load());
  }
  std::string advertised_endpoints() const override {
    std::string out;
    for (const broker::Listener& l : config_.listeners) {
      broker::Listener a = *config_.advertised_for(l.name);
      if (server_) ctx_.AdvertisedFor(l.name, &a.host, &a.port);  // bound ports
      if (!out.empty()) out += ',';
      out += a.ToString();
    }
    return out;
  }
  std::string listener_protocols() const override {
    std::string out;
    for (const broker::Listener& l : config_.listeners) {
      if (!out.empty()) out += ',';
      out += l.name;
      out += ':';
      out += broker::SecurityProtocolName(config_.protocol_of(l));
    }
    return out;
  }
  int32_t node_id() const override { return config_.node_id; }
  std::string data_dir() const override { return config_.data_dir; }
  std::string network_backend() const override {
    return server_ ? net::BackendName(server_->backend()) : net::BackendName(backend_);
  }
  std::string cluster_id() const override { return state_ ? ctx_.cluster_id() : ""; }

  std::string MetricsText() override {
    std::unique_lock<std::timed_mutex> l(mu_, kObserveWait);
    if (!l.owns_lock() || !state_ || !server_) return "";
    broker::ServerGauges server{server_->active_connections(), server_->connection_totals()};
    return broker::RenderMetrics(ctx_, metrics(), server);
  }

  std::string ReadinessProblem() override {
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

  std::string http_listen() const override { return metrics_config_.http_listen; }

  Status ApplyClusterState(const std::string& state_json,
                           std::vector<std::string>* report) override {
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
    const size_t following = applied.follow.size();
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

  std::string TakeIsrChanges() override {
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
      out.push_back(broker::json::Value(broker::json::Object{
          {"topic", c.topic}, {"partition", c.partition}, {"leader_epoch", c.leader_epoch},
          {"isr", broker::json::Value(std::move(isr))}}));
      HR_LOG(kInfo) << "ISR change proposed for " << c.topic << "-" << c.partition
                    << " at leader epoch " << c.leader_epoch << ": " << broker::IdList(c.isr);
    }
    return broker::json::Write(broker::json::Value(std::move(out)));
  }

  std::string OfflineReplicas() override {
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

  bool NextControlRequest(int64_t timeout_ms, uint64_t* id, std::string* kind,
                          std::string* payload) override {
    broker::ClusterState* cluster = ClusterOrNull();
    if (cluster == nullptr) return false;
    auto taken = cluster->requests().Next(std::chrono::milliseconds(timeout_ms));
    if (!taken) return false;
    *id = taken->id;
    *kind = std::move(taken->kind);
    *payload = std::move(taken->payload);
    return true;
  }

  bool CompleteControlRequest(uint64_t id, const std::string& result_json) override {
    broker::ClusterState* cluster = ClusterOrNull();
    return cluster != nullptr && cluster->requests().Complete(id, result_json);
  }

 private:
  // An OpenSSL context per SSL / SASL_SSL listener (docs/security.md).
  Status BuildTlsContexts() {
    tls_contexts_.clear();
    for (const broker::Listener& l : config_.listeners) {
      net::SecurityProtocol p = config_.protocol_of(l);
      if (p != net::SecurityProtocol::kSsl && p != net::SecurityProtocol::kSaslSsl) continue;
      HR_ASSIGN_OR_RETURN(net::TlsSettings settings, ssl_config_.TlsSettingsFor(l.name));
      HR_ASSIGN_OR_RETURN(std::shared_ptr<net::TlsContext> tls, net::TlsContext::Create(settings));
      tls_contexts_[l.name] = std::move(tls);
    }
    return Status::OK();
  }

  // Per listener, the address Metadata gives its clients: its entry in
  // `advertised`, else the listener itself (with the bound port for port 0).
  void SetListenerEndpoints(const std::vector<broker::Listener>& advertised) {
    std::vector<broker::ListenerEndpoint> endpoints;
    for (size_t i = 0; i < config_.listeners.size(); ++i) {
      const broker::Listener& l = config_.listeners[i];
      auto a = std::find_if(advertised.begin(), advertised.end(),
                            [&l](const broker::Listener& x) { return x.name == l.name; });
      if (a != advertised.end()) {
        endpoints.push_back({l.name, a->host, a->port});
      } else {
        endpoints.push_back({l.name, l.host, l.port == 0 ? bound_ports_[i] : l.port});
      }
    }
    ctx_.set_listener_endpoints(std::move(endpoints));
  }

  // advertised.listeners in effect under the dynamic layers `l`: a
  // per-broker value (checked when it was altered here; one set for this id
  // through another broker that names an unknown listener is logged and
  // ignored), else the start value.
  std::vector<broker::Listener> EffectiveAdvertised(const broker::DynamicBrokerLayers& l) const {
    auto it = l.per_broker.find("advertised.listeners");
    if (it == l.per_broker.end()) return config_.advertised_listeners;
    auto parsed = config_.ParseAdvertisedListeners(it->second);
    if (parsed.ok()) return std::move(parsed).value();
    HR_LOG(kWarn) << "dynamic advertised.listeners '" << it->second
                  << "' ignored: " << parsed.status().message();
    return config_.advertised_listeners;
  }

  // Hands out the effective advertised listeners now and after every
  // dynamic change (Kafka's per-broker dynamic advertised.listeners). In a
  // cluster the control plane re-registers the broker with the new
  // endpoints (advertised_endpoints()) once it applied the change.
  // REQUIRES: the server is listening (bound_ports_ set).
  void FollowAdvertisedListeners() {
    broker::DynamicBrokerConfig& dynamic = state_->dynamic_config();
    {
      std::lock_guard<std::mutex> lock(advertised_mu_);
      advertised_now_ = EffectiveAdvertised(dynamic.layers());
      SetListenerEndpoints(advertised_now_);
    }
    dynamic.Subscribe([this](const broker::DynamicBrokerLayers& layers) {
      std::vector<broker::Listener> next = EffectiveAdvertised(layers);
      std::lock_guard<std::mutex> lock(advertised_mu_);
      if (next == advertised_now_) return;
      advertised_now_ = std::move(next);
      SetListenerEndpoints(advertised_now_);
      std::string shown;
      for (const broker::Listener& l : advertised_now_) shown += (shown.empty() ? "" : ",") + l.ToString();
      HR_LOG(kInfo) << "advertised.listeners now "
                    << (shown.empty() ? "the listeners' own addresses" : shown);
    });
  }

  net::ServerOptions ServerOptions() const {
    net::ServerOptions opts;
    opts.listeners.clear();
    for (const broker::Listener& l : config_.listeners) {
      net::ListenAddress a{l.host, static_cast<uint16_t>(l.port), l.ToString(), l.name,
                           config_.protocol_of(l), nullptr};
      if (auto it = tls_contexts_.find(l.name); it != tls_contexts_.end()) a.tls = it->second;
      opts.listeners.push_back(std::move(a));
    }
    opts.io_threads = config_.io_threads;
    opts.max_request_bytes = config_.socket_request_max_bytes;
    opts.max_connections = config_.max_connections;
    opts.max_connections_per_ip = config_.max_connections_per_ip;
    opts.idle_timeout = std::chrono::milliseconds(config_.connections_max_idle_ms);
    opts.max_queued_request_bytes = config_.queued_max_request_bytes;
    opts.send_buffer_bytes = config_.socket_send_buffer_bytes;
    opts.receive_buffer_bytes = config_.socket_receive_buffer_bytes;
    opts.backend = backend_;
    return opts;
  }

  // How a coordinator's own log (single node) is wired: the purgatory and
  // the flusher.
  broker::PartitionServices CoordinatorLogServices() const {
    broker::PartitionServices services;
    services.listener = &state_->purgatory();
    services.flusher = &state_->flusher();
    services.local_broker_id = config_.node_id;
    services.metrics = metrics();
    return services;
  }

  // The replication throttles (replication_quota.h) from the start
  // properties and the dynamic layers, following every dynamic change.
  void StartReplicationQuotas() {
    namespace rq = broker::replication;
    broker::DynamicBrokerConfig& dynamic = state_->dynamic_config();
    const std::map<std::string, std::string>& start = config_.start_properties;
    replication_quotas_ = std::make_unique<rq::ReplicationQuotas>(
        broker::EffectiveFamilyConfig(rq::ReplicationQuotaKeys(), start, dynamic.layers()));
    dynamic.Subscribe([q = replication_quotas_.get(), &start](const broker::DynamicBrokerLayers& l) {
      q->Reconfigure(broker::EffectiveFamilyConfig(rq::ReplicationQuotaKeys(), start, l));
    });
    ctx_.replication_quotas = replication_quotas_.get();
  }

  // The group coordinator on `log_partition` (cluster mode: a partition of
  // __consumer_offsets led here) or on its own data_dir/__group_metadata log
  // (null).
  Result<std::shared_ptr<broker::group::GroupCoordinator>> OpenGroupCoordinator(
      std::shared_ptr<broker::Partition> log_partition) {
    broker::group::GroupCoordinator::Options gopts;
    gopts.config = group_config_;
    gopts.data_dir = config_.data_dir;
    gopts.log_services = CoordinatorLogServices();
    gopts.env = config_.file_env;
    // Cluster mode: the router's one timer ticks every coordinator.
    gopts.start_timer = log_partition == nullptr;
    gopts.log_partition = std::move(log_partition);
    HR_ASSIGN_OR_RETURN(auto groups, broker::group::GroupCoordinator::Open(std::move(gopts)));
    return std::shared_ptr<broker::group::GroupCoordinator>(std::move(groups));
  }

  // Cluster mode: a single node's data_dir/__group_metadata is re-committed
  // into the cluster (group_metadata_migration.h). A log that cannot be read
  // stays where it is (logged): the broker serves without it.
  void StartGroupMetadataMigration() {
    auto m = broker::GroupMetadataMigration::Start(ctx_, config_.data_dir, config_.file_env,
                                                   group_config_, CoordinatorLogServices());
    if (!m.ok()) {
      HR_LOG(kError) << "group metadata migration: cannot read " << config_.data_dir
                     << "/__group_metadata: " << m.status().ToString();
      return;
    }
    group_migration_ = std::move(m).value();
  }

  // Stops every group coordinator here and the router's timer; group
  // requests then answer COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR.
  void StopGroupCoordinator() {
    if (group_leadership_) group_leadership_->StopAll();
  }

  // The transaction coordinator on `log_partition` (cluster mode: a
  // partition of __transaction_state led here) or on its own
  // data_dir/__transaction_state log (null).
  Result<std::shared_ptr<broker::txn::TxnCoordinator>> OpenTxnCoordinator(
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

  // Single node: the coordinators' logs are served as the internal topics
  // (Metadata lists them; Fetch/ListOffsets read them as from Kafka).
  void RegisterInternalTopics() {
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
  }

  // Stops every transaction coordinator here and the router's timer;
  // transaction requests then answer NOT_COORDINATOR /
  // COORDINATOR_NOT_AVAILABLE.
  void StopTxnCoordinator() {
    if (txn_leadership_) txn_leadership_->StopAll();
  }

  // FollowCoordinatorLeadershipLocked from the log dir mover's thread. Stop
  // holds mu_ while it joins that thread, so this gives up once the broker
  // is stopping instead of waiting for mu_.
  void FollowCoordinatorsAfterMove() {
    std::unique_lock<std::timed_mutex> l(mu_, std::defer_lock);
    while (!l.try_lock_for(std::chrono::milliseconds(50))) {
      if (stopping_.load()) return;
    }
    if (state_ && state_->cluster()) FollowCoordinatorLeadershipLocked();
  }

  // Cluster mode: one group coordinator per partition of
  // __consumer_offsets this broker leads (docs/cluster.md "Consumer groups"),
  // one transaction coordinator per partition of __transaction_state
  // (docs/cluster.md "Transactions"). REQUIRES: mu_.
  void FollowCoordinatorLeadershipLocked() {
    const auto view = state_->cluster()->view();
    group_leadership_->Follow(*view, state_->topics(), [this](std::shared_ptr<broker::Partition> log) {
      return OpenGroupCoordinator(std::move(log));
    });
    txn_leadership_->Follow(*view, state_->topics(), [this](std::shared_ptr<broker::Partition> log) {
      return OpenTxnCoordinator(std::move(log));
    });
  }

  // The authorizer's ACLs: single node, from the ACL file in the data dir
  // (the store the ACL APIs write); cluster mode, from the cluster state.
  Status OpenAcls() {
    ctx_.authorizer = &authorizer_;
    ctx_.acl_store = nullptr;
    acl_store_.reset();
    if (!authorizer_.enabled()) return Status::OK();
    HR_LOG(kInfo) << "authorizer " << authorizer_.config().class_name << " enabled ("
                  << authorizer_.config().super_users.size() << " super user(s), "
                  << "allow.everyone.if.no.acl.found="
                  << (authorizer_.config().allow_everyone_if_no_acl_found ? "true" : "false") << ")";
    if (config_.cluster_mode()) return Status::OK();
    HR_ASSIGN_OR_RETURN(acl_store_,
                        broker::auth::FileAclStore::Open(config_.file_env, config_.data_dir, &authorizer_));
    ctx_.acl_store = acl_store_.get();
    return Status::OK();
  }
  // Publishes the cluster state's "acls" array when it changed. REQUIRES: mu_.
  void ApplyClusterAcls(const broker::json::Value& acls) {
    std::string text = broker::json::Write(acls);
    if (text == applied_acls_) return;
    auto bindings = broker::auth::BindingsFromJson(acls);
    if (!bindings.ok()) {
      HR_LOG(kWarn) << "cluster state: ACLs not applied: " << bindings.status().message();
      return;
    }
    HR_LOG(kInfo) << "cluster state: " << bindings->size() << " ACL binding(s) in force";
    authorizer_.Publish(std::make_shared<const broker::auth::AclSnapshot>(std::move(bindings).value()));
    applied_acls_ = std::move(text);
  }

  // The ClusterState, or null (single node, not started). It lives as long
  // as state_; the binding's control-plane thread stops calling before Stop.
  broker::ClusterState* ClusterOrNull() {
    std::lock_guard<std::timed_mutex> l(mu_);
    return state_ ? state_->cluster() : nullptr;
  }

  // Serialises Start/Stop/ApplyClusterState. Timed: the metrics page and
  // the readiness check wait for it at most kObserveWait, so they answer
  // (not ready) during a long Start (log recovery) or Stop.
  mutable std::timed_mutex mu_;
  static constexpr std::chrono::milliseconds kObserveWait{500};
  const std::unique_ptr<FileEnv> file_env_;  // null = the OS; outlives everything below
  BrokerConfig config_;
  broker::group::GroupConfig group_config_;
  broker::txn::TxnConfig txn_config_;
  broker::fetch::FetchSessionConfig fetch_config_;
  std::unique_ptr<broker::fetch::FetchSessionCache> fetch_sessions_;  // made by Start
  broker::CleanerConfig cleaner_config_;
  std::unique_ptr<broker::LogCleaner> cleaner_;  // stopped before the partitions close
  broker::MetricsConfig metrics_config_;
  broker::SslConfig ssl_config_;  // ssl.* and listener.name.*.ssl.*
  // Per TLS listener name: its OpenSSL context, built at Start().
  std::map<std::string, std::shared_ptr<const net::TlsContext>> tls_contexts_;
  broker::quota::QuotaConfig quota_config_;
  std::unique_ptr<broker::quota::ClientQuotaStore> client_quotas_;  // made by Start
  std::unique_ptr<broker::quota::QuotaManager> quotas_;
  // Client quotas from <data_dir>/client-quotas.json (broker/quota/).
  Status OpenClientQuotas() {
    HR_ASSIGN_OR_RETURN(client_quotas_,
                        broker::quota::ClientQuotaStore::Open(config_.data_dir, file_env_.get()));
    quotas_ = std::make_unique<broker::quota::QuotaManager>(quota_config_, client_quotas_.get());
    ctx_.client_quotas = client_quotas_.get();
    ctx_.quotas = quotas_.get();
    return Status::OK();
  }
  // Lives as long as the broker (counters survive a Stop/Start); null
  // through metrics() when headrace.metrics.enable is false.
  mutable broker::BrokerMetrics metrics_;  // thread-safe recording
  broker::CachedDataDirProbe data_dir_probe_;
  broker::auth::Authorizer authorizer_;  // outlives every request (ctx_.authorizer)
  std::unique_ptr<broker::auth::FileAclStore> acl_store_;  // single node with an authorizer
  std::string applied_acls_;  // cluster mode: the "acls" last published (guarded by mu_)
  broker::BrokerMetrics* metrics() const { return metrics_config_.enabled ? &metrics_ : nullptr; }
  net::Backend backend_;
  std::unique_ptr<broker::BrokerState> state_;
  // Cluster mode: re-commits a single node's group log (null: none).
  std::unique_ptr<broker::GroupMetadataMigration> group_migration_;
  // The group coordinators here (single node: partition 0 only).
  std::unique_ptr<broker::group::GroupCoordinators> group_coordinators_;
  // Which group coordinators run here (cluster mode: follows leadership of
  // __consumer_offsets; guarded by mu_).
  using GroupLeadership = broker::CoordinatorLeadership<broker::group::GroupCoordinators>;
  std::unique_ptr<GroupLeadership> group_leadership_;
  // The transaction coordinators here (single node: partition 0 only),
  // which run (cluster mode: follows leadership of __transaction_state;
  // guarded by mu_), and the executor they share (cluster mode; single
  // node: its own).
  std::unique_ptr<broker::txn::TxnCoordinators> txn_coordinators_;
  using TxnLeadership = broker::CoordinatorLeadership<broker::txn::TxnCoordinators>;
  std::unique_ptr<TxnLeadership> txn_leadership_;
  std::shared_ptr<broker::SerialExecutor> txn_executor_;
  // Write transaction markers: to local partitions (the coordinator's and
  // WriteTxnMarkers'), and in a cluster to the leaders of the others. Both
  // outlive the transaction coordinator.
  std::unique_ptr<broker::LocalTxnMarkerWriter> markers_;
  std::unique_ptr<broker::ClusterTxnMarkerWriter> cluster_markers_;
  broker::BrokerContext ctx_;
  // SASL listeners' settings (validated in Create) and the SCRAM users.
  std::unique_ptr<broker::sasl::SaslServer> sasl_;
  std::unique_ptr<broker::sasl::ScramCredentialStore> scram_store_;
  std::unique_ptr<broker::Dispatcher> dispatcher_;
  std::unique_ptr<net::Server> server_;
  std::vector<uint16_t> bound_ports_;  // per listener, set once listening
  std::atomic<bool> stopping_{false};  // Stop() has begun
  std::mutex advertised_mu_;  // orders dynamic advertised.listeners changes
  std::vector<broker::Listener> advertised_now_;  // guarded by advertised_mu_
  // Cluster mode: copies the partitions this broker follows from their leaders.
  std::unique_ptr<broker::replication::ReplicationQuotas> replication_quotas_;
  std::unique_ptr<broker::replication::ReplicaFetcherManager> fetchers_;
};

}  // namespace

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
