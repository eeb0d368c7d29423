// BrokerImpl: the Broker (include/headrace/broker.h) this library builds.
// Its parts, by file: broker.cc (Create, Start, Stop, observation),
// broker_listeners.cc (listeners, TLS contexts, advertised addresses),
// broker_cluster.cc (the control plane's calls in cluster mode),
// broker_coordinators.cc (group and transaction coordinators, where they
// run), broker_acls_quotas.cc (ACLs, client and replication quotas).
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "headrace/broker.h"

#include "broker/server/coordinator_leadership.h"
#include "broker/server/dispatcher.h"
#include "broker/server/group_metadata_migration.h"
#include "broker/api/handler.h"
#include "broker/api/txn_marker_cluster.h"
#include "broker/api/txn_marker_local.h"
#include "broker/api/share_state_client.h"
#include "broker/security/auth/acl_store.h"
#include "broker/security/auth/authorizer.h"
#include "broker/config/broker_config.h"
#include "broker/storage/data_dir_probe.h"
#include "broker/fetch/fetch_session.h"
#include "broker/fetch/fetch_session_config.h"
#include "broker/share/share_registry.h"
#include "broker/share/share_session.h"
#include "broker/coordinator/group/group_config.h"
#include "broker/coordinator/group/group_config_store.h"
#include "broker/coordinator/group/group_coordinator.h"
#include "broker/coordinator/group/group_coordinators.h"
#include "broker/base/json.h"
#include "broker/storage/log_cleaner.h"
#include "broker/config/metrics_config.h"
#include "broker/security/quota/quota_manager.h"
#include "broker/replication/inter_broker_security.h"
#include "broker/replication/replica_fetcher.h"
#include "broker/replication/replication_quota.h"
#include "broker/security/sasl/sasl_server.h"
#include "broker/security/sasl/scram_store.h"
#include "broker/base/serial_executor.h"
#include "broker/config/ssl_config.h"
#include "broker/coordinator/txn/txn_coordinators.h"
#include "broker/coordinator/share/share_coordinators.h"
#include "net/server.h"
#include "net/tls_context.h"

namespace headrace {

class BrokerImpl final : public Broker {
 public:
  BrokerImpl(broker::BrokerConfig config, broker::group::GroupConfig group_config,
             broker::txn::TxnConfig txn_config, broker::fetch::FetchSessionConfig fetch_config,
             broker::CleanerConfig cleaner_config, broker::MetricsConfig metrics_config,
             broker::SslConfig ssl_config, broker::auth::AuthorizerConfig auth_config,
             broker::quota::QuotaConfig quota_config, net::Backend backend,
             std::unique_ptr<FileEnv> file_env);
  ~BrokerImpl() override { (void)Stop(); }
  void SetSasl(std::unique_ptr<broker::sasl::SaslServer> sasl) { sasl_ = std::move(sasl); }
  void SetInterBrokerSecurity(std::shared_ptr<const broker::replication::InterBrokerSecurity> s) {
    ctx_.inter_broker_security = std::move(s);
  }

  Status Start() override;
  Status Stop() override;
  std::string listen_address() const override;
  std::string advertised_address() const override;
  std::string advertised_endpoints() const override;
  std::string listener_protocols() const override;
  int32_t node_id() const override { return config_.node_id; }
  std::string data_dir() const override { return config_.data_dir; }
  std::string network_backend() const override {
    return server_ ? net::BackendName(server_->backend()) : net::BackendName(backend_);
  }
  std::string cluster_id() const override { return state_ ? ctx_.cluster_id() : ""; }

  std::string MetricsText() override;
  std::string ReadinessProblem() override;
  Status Authorize(const std::string& principal, const std::string& host,
                   const std::string& operation, const std::string& resource_type,
                   const std::string& name, bool* allowed) const override;
  std::string http_listen() const override { return metrics_config_.http_listen; }

  Status ApplyClusterState(const std::string& state_json,
                           std::vector<std::string>* report) override;
  std::string TakeIsrChanges() override;
  std::string OfflineReplicas() override;
  bool NextControlRequest(int64_t timeout_ms, uint64_t* id, std::string* kind,
                          std::string* payload) override;
  bool CompleteControlRequest(uint64_t id, const std::string& result_json) override;

 private:
  // Undoes a Start that failed part way (REQUIRES: mu_, state_ open): stops
  // what it started, in Stop's order, and returns `why`.
  Status AbandonStart(Status why);

  // An OpenSSL context per SSL / SASL_SSL listener (docs/security.md).
  Status BuildTlsContexts();

  // Per listener, the address Metadata gives its clients: its entry in
  // `advertised`, else the listener itself (with the bound port for port 0).
  void SetListenerEndpoints(const std::vector<broker::Listener>& advertised);

  // advertised.listeners in effect under the dynamic layers `l`: a
  // per-broker value (checked when it was altered here; one set for this id
  // through another broker that names an unknown listener is logged and
  // ignored), else the start value.
  std::vector<broker::Listener> EffectiveAdvertised(const broker::DynamicBrokerLayers& l) const;

  // Hands out the effective advertised listeners now and after every
  // dynamic change (Kafka's per-broker dynamic advertised.listeners). In a
  // cluster the control plane re-registers the broker with the new
  // endpoints (advertised_endpoints()) once it applied the change.
  // REQUIRES: the server is listening (bound_ports_ set).
  void FollowAdvertisedListeners();

  net::ServerOptions ServerOptions() const;

  // How a coordinator's own log (single node) is wired: the purgatory and
  // the flusher.
  broker::PartitionServices CoordinatorLogServices() const;

  // The replication throttles (replication_quota.h) from the start
  // properties and the dynamic layers, following every dynamic change.
  void StartReplicationQuotas();

  // The group coordinator on `log_partition` (cluster mode: a partition of
  // __consumer_offsets led here) or on its own data_dir/__group_metadata log
  // (null).
  Result<std::shared_ptr<broker::group::GroupCoordinator>> OpenGroupCoordinator(
      std::shared_ptr<broker::Partition> log_partition);

  // Cluster mode: a single node's data_dir/__group_metadata is re-committed
  // into the cluster (group_metadata_migration.h). A log that cannot be read
  // stays where it is (logged): the broker serves without it.
  void StartGroupMetadataMigration();

  // Stops every group coordinator here and the router's timer; group
  // requests then answer COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR.
  void StopGroupCoordinator() {
    if (group_leadership_) group_leadership_->StopAll();
  }

  // The transaction coordinator on `log_partition` (cluster mode: a
  // partition of __transaction_state led here) or on its own
  // data_dir/__transaction_state log (null).
  Result<std::shared_ptr<broker::txn::TxnCoordinator>> OpenTxnCoordinator(
      std::shared_ptr<broker::Partition> log_partition);

  // The share coordinator on `log_partition` (cluster mode: a partition of
  // __share_group_state led here) or on its own
  // data_dir/__share_group_state log (null).
  Result<std::shared_ptr<broker::share::ShareCoordinator>> OpenShareCoordinator(
      std::shared_ptr<broker::Partition> log_partition);
  void StopShareCoordinator() {
    if (share_leadership_) share_leadership_->StopAll();
  }

  // Single node: the coordinators' logs are served as the internal topics
  // (Metadata lists them; Fetch/ListOffsets read them as from Kafka).
  void RegisterInternalTopics();

  // Stops every transaction coordinator here and the router's timer;
  // transaction requests then answer NOT_COORDINATOR /
  // COORDINATOR_NOT_AVAILABLE.
  void StopTxnCoordinator() {
    if (txn_leadership_) txn_leadership_->StopAll();
  }

  // FollowCoordinatorLeadershipLocked from the log dir mover's thread. Stop
  // holds mu_ while it joins that thread, so this gives up once the broker
  // is stopping instead of waiting for mu_.
  void FollowCoordinatorsAfterMove();

  // Cluster mode: one group coordinator per partition of
  // __consumer_offsets this broker leads (docs/cluster.md "Consumer groups"),
  // one transaction coordinator per partition of __transaction_state
  // (docs/cluster.md "Transactions"). REQUIRES: mu_.
  void FollowCoordinatorLeadershipLocked();

  // The authorizer's ACLs: single node, from the ACL file in the data dir
  // (the store the ACL APIs write); cluster mode, from the cluster state.
  Status OpenAcls();
  // Publishes the cluster state's "acls" array when it changed. REQUIRES: mu_.
  void ApplyClusterAcls(const broker::json::Value& acls);

  // The ClusterState, or null (single node, not started). It lives as long
  // as state_; the binding's control-plane thread stops calling before Stop.
  broker::ClusterState* ClusterOrNull();

  // Serialises Start/Stop/ApplyClusterState. Timed: the metrics page and
  // the readiness check wait for it at most kObserveWait, so they answer
  // (not ready) during a long Start (log recovery) or Stop.
  mutable std::timed_mutex mu_;
  static constexpr std::chrono::milliseconds kObserveWait{500};
  const std::unique_ptr<FileEnv> file_env_;  // null = the OS; outlives everything below
  broker::BrokerConfig config_;
  broker::group::GroupConfig group_config_;
  broker::txn::TxnConfig txn_config_;
  broker::fetch::FetchSessionConfig fetch_config_;
  std::unique_ptr<broker::fetch::FetchSessionCache> fetch_sessions_;  // made by Start
  // KIP-932 share-partitions and share sessions (made by Start; in memory).
  std::unique_ptr<broker::share::ShareRegistry> share_partitions_;
  std::unique_ptr<broker::share::ShareSessionCache> share_sessions_;
  broker::CleanerConfig cleaner_config_;
  std::unique_ptr<broker::LogCleaner> cleaner_;  // stopped before the partitions close
  broker::MetricsConfig metrics_config_;
  broker::SslConfig ssl_config_;  // ssl.* and listener.name.*.ssl.*
  // Per TLS listener name: its OpenSSL context, built at Start().
  std::map<std::string, std::shared_ptr<const net::TlsContext>> tls_contexts_;
  broker::quota::QuotaConfig quota_config_;
  std::unique_ptr<broker::quota::ClientQuotaStore> client_quotas_;  // made by Start
  std::unique_ptr<broker::group::GroupConfigStore> group_configs_;  // made by Start
  std::unique_ptr<broker::quota::QuotaManager> quotas_;
  // Client quotas from <data_dir>/client-quotas.json (broker/security/quota/).
  Status OpenClientQuotas();  // and the group configs store
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
  // The share coordinators here (single node: partition 0 only) and which
  // run (cluster mode: follows leadership of __share_group_state; guarded
  // by mu_).
  std::unique_ptr<broker::share::ShareCoordinators> share_coordinators_;
  using ShareLeadership = broker::CoordinatorLeadership<broker::share::ShareCoordinators>;
  std::unique_ptr<ShareLeadership> share_leadership_;
  // Cluster mode: calls to the share coordinators on other brokers.
  std::unique_ptr<broker::ShareStateClient> share_state_client_;
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

}  // namespace headrace
