// Dynamic broker configs (Kafka's KIP-226): the broker keys whose update
// mode is per-broker or cluster-wide (BrokerConfigKeyTable, and the keys
// registered families declare dynamic) change at run time through
// AlterConfigs / IncrementalAlterConfigs on resource type BROKER: name
// "<node id>" sets this broker's value (DYNAMIC_BROKER_CONFIG), name "" the
// cluster-wide default (DYNAMIC_DEFAULT_BROKER_CONFIG). A per-broker value
// wins over the default, which wins over server.properties.
//
// Persistence: <data_dir>/dynamic-broker-configs.json,
//   {"version": 1, "default": {key: value}, "broker": {key: value}},
// replaced atomically (WriteFileAtomically: temp file, fsync, rename) before
// a change is applied or answered, and read at start before any topic is
// opened. Cluster mode: ZooKeeper is the source (/config/brokers/<default>
// and /config/brokers/<id>, written by the control plane on AlterConfigs);
// every broker's control plane hands both to ApplyFromCluster with each
// cluster state, and the file is this broker's copy of the last ones seen
// (topics open with them at the next start before ZooKeeper is read).
//
// Applying: subscribers (Subscribe) get the new layers after every change,
// on the thread of the change. The topic registry is one (topic defaults:
// log.retention.ms, log.segment.bytes, ...); a family with dynamic keys
// subscribes itself.
//
// Threading: thread-safe; changes are serialised.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "broker/config/topic_config.h"
#include "common/file_env.h"
#include "headrace/status.h"

namespace headrace::broker {

// Broker key -> value, per layer.
struct DynamicBrokerLayers {
  ConfigMap cluster_default;
  ConfigMap per_broker;
};

// The topic-default part of `layers` by topic key ("retention.ms" for
// log.retention.ms): {cluster default, per broker}.
std::pair<ConfigMap, ConfigMap> TopicDefaultLayers(const DynamicBrokerLayers& layers);

// Kafka's checks of one dynamic change: an unknown key, a read-only one, a
// per-broker-only key on the cluster default, or a bad value are
// INVALID_REQUEST naming the key (Kafka answers ConfigException as
// InvalidRequestException on BROKER resources).
Status CheckDynamicBrokerConfig(const std::string& key, const std::string& value,
                                bool cluster_default);

// The mode of a broker key from the broker table or a registered family;
// NotFound for an unknown key.
Result<UpdateMode> BrokerKeyUpdateMode(const std::string& key);

class DynamicBrokerConfig {
 public:
  static constexpr const char* kFileName = "dynamic-broker-configs.json";

  // Reads the file in `data_dir` (none = no dynamic configs). Entries that no
  // longer pass CheckDynamicBrokerConfig are dropped with a warning. `env`
  // null = the OS; it must outlive this object.
  static Result<std::unique_ptr<DynamicBrokerConfig>> Open(const std::string& data_dir,
                                                           FileEnv* env);

  DynamicBrokerLayers layers() const;

  // Replaces one layer with `next` (every key checked), persists, then
  // notifies subscribers. validate_only: only the checks.
  // Errors: INVALID_REQUEST (checks), KAFKA_STORAGE_ERROR (write).
  Status Replace(bool cluster_default, const ConfigMap& next, bool validate_only);

  // Cluster mode: the layers ZooKeeper holds now. Entries that fail the
  // checks are dropped with a warning; nothing happens when both layers
  // equal the current ones; otherwise as Replace (persist, notify).
  void ApplyFromCluster(DynamicBrokerLayers layers);

  // The checks of Replace alone. Errors: INVALID_REQUEST.
  static Status Check(bool cluster_default, const ConfigMap& next);

  using Subscriber = std::function<void(const DynamicBrokerLayers&)>;
  void Subscribe(Subscriber s);

 private:
  DynamicBrokerConfig(std::string data_dir, FileEnv* env) : dir_(std::move(data_dir)), env_(env) {}
  Status Persist(const DynamicBrokerLayers& layers);
  // Persists `updated`, makes it current and notifies. REQUIRES: change_mu_.
  Status CommitLocked(const DynamicBrokerLayers& updated);

  const std::string dir_;
  FileEnv* const env_;
  std::mutex change_mu_;  // serialises Replace (persist + notify in order)
  mutable std::mutex mu_;  // guards layers_ and subscribers_
  DynamicBrokerLayers layers_;
  std::vector<Subscriber> subscribers_;
};

}  // namespace headrace::broker
