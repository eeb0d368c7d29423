// ClusterView: the cluster as the control plane last told this broker
// (docs/cluster.md, "Control plane <-> data plane"): live brokers, the
// controller, and every topic's partitions with leader, leader epoch,
// replicas and ISR. Immutable once parsed; the broker publishes a new one
// per apply_cluster and handlers read the snapshot they hold without locks.
// Single-node brokers have none.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "broker/base/json.h"
#include "broker/config/topic_config.h"
#include "common/uuid.h"
#include "headrace/status.h"

namespace headrace::broker {

struct BrokerEndpoint {
  int32_t id = -1;
  std::string host;  // the inter-broker listener's address
  int32_t port = 0;
  std::optional<std::string> rack;
  // Its broker epoch (KIP-380: the registration znode's czxid; a new one per
  // incarnation), or -1 when the document has none.
  int64_t epoch = -1;
  // Every listener's advertised address, from the broker's registration
  // (`endpoints`, "NAME://host:port"); empty = only host/port are known.
  struct Listener {
    std::string name;
    std::string host;
    int32_t port = 0;
  };
  std::vector<Listener> listeners;
  // The address clients of listener `name` are given (Kafka: the client's
  // listener selects every broker's endpoint); host/port when `name` is ""
  // or no listeners are known; false when the broker has no such listener.
  bool AddressFor(std::string_view name, std::string* out_host, int32_t* out_port) const;
};

struct PartitionAssignment {
  int32_t partition = 0;
  int32_t leader = -1;  // -1: no leader (offline)
  int32_t leader_epoch = 0;
  std::vector<int32_t> replicas;
  std::vector<int32_t> isr;
};

struct TopicView {
  std::string name;
  Uuid id;
  ConfigMap configs;                          // overrides
  std::vector<PartitionAssignment> partitions;  // index = partition id
};

struct ClusterView {
  std::string cluster_id;
  int32_t controller_id = -1;
  int32_t controller_epoch = 0;
  std::vector<BrokerEndpoint> brokers;     // sorted by id
  // This broker's own epoch ("broker_epoch"; -1 = not known): what its
  // follower fetches carry (docs/cluster.md, "Broker epochs").
  int64_t local_broker_epoch = -1;
  std::map<std::string, TopicView, std::less<>> topics;
  // Dynamic broker configs from ZooKeeper ("broker_configs": {"default":
  // {key: value}, "broker": {key: value}}: /config/brokers/<default> and
  // /config/brokers/<this id>); nullopt when the document has none.
  std::optional<std::pair<std::map<std::string, std::string>, std::map<std::string, std::string>>>
      broker_configs;

  // The ACLs from ZooKeeper ("acls": an array of broker/security/auth/acl.h bindings
  // as JSON); nullopt when the document has none.
  std::optional<json::Value> acls;

  const BrokerEndpoint* FindBroker(int32_t id) const;
  const TopicView* FindTopic(std::string_view name) const;
  const TopicView* FindTopicById(const Uuid& id) const;
};

// Parses the apply_cluster document. Errors: InvalidArgument naming the
// field (a malformed document changes nothing).
Result<std::shared_ptr<const ClusterView>> ParseClusterView(std::string_view json_text);

}  // namespace headrace::broker
