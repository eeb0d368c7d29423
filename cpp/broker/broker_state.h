// Everything below the Kafka API handlers, wired together in the order it
// must start and stop. A handler library holds one BrokerState and uses:
//   topics()        create/delete/alter topics, find partitions
//   fetch_waiters() park a Fetch until data arrives or max_wait passes
//   flusher()       answer acks=all produces after their fsync (if
//                   config().acks_all_fsync)
//   admin_worker()  run topic administration off the network threads
#pragma once

#include <memory>

#include "broker/admin_worker.h"
#include "broker/broker_config.h"
#include "broker/data_dir_lock.h"
#include "broker/fetch_waiters.h"
#include "broker/flusher.h"
#include "broker/maintenance.h"
#include "broker/metadata_store.h"
#include "broker/producer_id_allocator.h"
#include "broker/topic_registry.h"

namespace headrace::broker {

class BrokerState {
 public:
  // Locks config.data_dir (DataDirLock: IOError naming the directory and
  // the holder's pid when another broker has it), opens the metadata file
  // in it, loads and recovers every topic, and starts the timer, flusher and
  // maintenance threads.
  static Result<std::unique_ptr<BrokerState>> Open(const BrokerConfig& config,
                                                   LogFactory log_factory = DefaultLogFactory());
  ~BrokerState();  // Close()

  TopicRegistry& topics() { return *registry_; }
  FetchWaiters& fetch_waiters() { return *waiters_; }
  Flusher& flusher() { return *flusher_; }
  AdminWorker& admin_worker() { return *admin_; }
  MetadataStore& metadata() { return *store_; }
  // Producer ids for InitProducerId (idempotent producers).
  ProducerIdAllocator& producer_ids() { return *producer_ids_; }
  const BrokerConfig& config() const { return registry_->config(); }
  const ClusterIdentity& identity() const { return registry_->identity(); }

  // Finishes queued admin jobs, stops maintenance, answers parked fetches (kShutdown), flushes and
  // answers pending acks=all requests, then closes every partition.
  // Idempotent.
  Status Close();

 private:
  BrokerState() = default;

  // Declaration order = construction order; destruction runs in reverse.
  std::unique_ptr<DataDirLock> lock_;  // held until everything else is gone
  std::unique_ptr<FileMetadataStore> store_;
  std::unique_ptr<ProducerIdAllocator> producer_ids_;
  std::unique_ptr<FetchWaiters> waiters_;
  std::unique_ptr<TopicRegistry> registry_;
  std::unique_ptr<Flusher> flusher_;
  std::unique_ptr<Maintenance> maintenance_;
  std::unique_ptr<AdminWorker> admin_;
  bool closed_ = false;
};

}  // namespace headrace::broker
