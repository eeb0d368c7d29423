// Everything below the Kafka API handlers, wired together in the order it
// must start and stop. A handler library holds one BrokerState and uses:
//   topics()        create/delete/alter topics, find partitions
//   purgatory()     park a request until a partition offset moves (acks=all
//                   produce: the HW; long-poll fetch: the HW or LSO) or its
//                   deadline passes
//   flusher()       the one thread that fsyncs partition logs
//   admin_worker()  run topic administration off the network threads
//   log_writers()   run appends off the network threads (a pool per log
//                   directory, each partition's appends in order)
#pragma once

#include <memory>

#include "broker/topics/admin_worker.h"
#include "broker/config/broker_config.h"
#include "broker/config/dynamic_broker_config.h"
#include "broker/cluster/cluster_state.h"
#include "broker/storage/log_dirs.h"
#include "broker/storage/log_writers.h"
#include "broker/partition/flusher.h"
#include "broker/storage/maintenance.h"
#include "broker/storage/metadata_store.h"
#include "broker/partition/producer_id_allocator.h"
#include "broker/partition/purgatory.h"
#include "broker/topics/topic_registry.h"

namespace headrace::broker {

class BrokerState {
 public:
  // Locks every log directory (log.dirs; LogDirs::Open: IOError naming the
  // directory and the holder's pid when another broker has one; a directory
  // that cannot be used is offline), opens the metadata file in the first, loads and recovers every topic, and starts the timer, flusher and
  // maintenance threads. Files go through config.file_env; logs are opened
  // by `log_factory` (default: Log::Open with config.file_env). `metrics`
  // (null: off) must outlive the state; partitions and the flusher record
  // into it.
  static Result<std::unique_ptr<BrokerState>> Open(const BrokerConfig& config,
                                                   LogFactory log_factory = nullptr,
                                                   BrokerMetrics* metrics = nullptr);
  ~BrokerState();  // Close()

  TopicRegistry& topics() { return *registry_; }
  Purgatory& purgatory() { return *purgatory_; }
  Flusher& flusher() { return *flusher_; }
  AdminWorker& admin_worker() { return *admin_; }
  LogWriters& log_writers() { return *writers_; }
  MetadataStore& metadata() { return *store_; }
  // Producer ids for InitProducerId (idempotent producers).
  ProducerIdAllocator& producer_ids() { return *producer_ids_; }
  // Cluster mode (zookeeper.connect set): the cluster as the control plane
  // last told it; null on a single node.
  ClusterState* cluster() { return cluster_.get(); }
  // Dynamic broker configs (AlterConfigs on BROKER resources).
  DynamicBrokerConfig& dynamic_config() { return *dynamic_; }
  const BrokerConfig& config() const { return registry_->config(); }
  const ClusterIdentity& identity() const { return registry_->identity(); }

  // Flushes what is scheduled (completing the acks=all produces it
  // commits), then completes every other waiter with kShutdown; later
  // waits complete at once. Called before the network stops so the answers
  // still go out. Idempotent.
  void StopWaiting();
  // Finishes queued admin jobs and appends, stops maintenance, StopWaiting(), then
  // closes every partition. Idempotent.
  Status Close();

 private:
  BrokerState() = default;

  // Declaration order = construction order; destruction runs in reverse.
  std::unique_ptr<LogDirs> dirs_;  // the locks: held until everything else is gone
  std::unique_ptr<FileMetadataStore> store_;
  std::unique_ptr<ProducerIdAllocator> producer_ids_;
  std::unique_ptr<Purgatory> purgatory_;
  std::unique_ptr<Flusher> flusher_;
  std::unique_ptr<DynamicBrokerConfig> dynamic_;  // before registry_: it notifies the registry
  std::unique_ptr<TopicRegistry> registry_;
  std::unique_ptr<Maintenance> maintenance_;
  std::unique_ptr<AdminWorker> admin_;
  std::unique_ptr<ClusterState> cluster_;
  std::unique_ptr<LogWriters> writers_;  // destroyed before the partitions close
  bool closed_ = false;
};

}  // namespace headrace::broker
