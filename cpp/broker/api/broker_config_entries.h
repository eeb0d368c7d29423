// What DescribeConfigs reports for the BROKER resource, all from the key
// tables: BrokerConfigKeyTable (broker_config.h) and every registered family
// (config_table.h). Each entry's source is the most specific layer that
// sets it: DYNAMIC_BROKER_CONFIG (this broker's dynamic value),
// DYNAMIC_DEFAULT_BROKER_CONFIG (the cluster-wide dynamic default),
// STATIC_BROKER_CONFIG (server.properties), DEFAULT_CONFIG; synonyms list
// every layer that sets it, most specific first, then the built-in default.
// read_only: the key's update mode is read-only.
#pragma once

#include <string>
#include <vector>

#include "broker/api/handler.h"
#include "broker/config/dynamic_broker_config.h"
#include "broker/config/topic_config.h"

namespace headrace::broker {

// Every broker setting of the serving broker, sorted by name.
// listeners/advertised.listeners show the actual bound/advertised port
// (port 0 resolved). `cluster_default_only`: only the entries the
// cluster-wide dynamic default sets (Kafka's answer for resource name "").
std::vector<ConfigEntry> DescribeBrokerConfigs(const BrokerContext& ctx,
                                               bool cluster_default_only = false);
// The same for a config that is not serving: listeners show all of
// `config`'s (the first one's port 0 as `advertised_port` when
// advertised.listeners is not set), advertised.listeners shows
// advertised_host:advertised_port under the first advertised listener's name.
std::vector<ConfigEntry> DescribeBrokerConfigs(const BrokerConfig& config,
                                               const std::string& advertised_host,
                                               int32_t advertised_port,
                                               const DynamicBrokerLayers& dynamic = {});

// AlterConfigs / IncrementalAlterConfigs on BROKER resource `name` ("" =
// the cluster-wide default, else this broker's id, already checked):
// replaces that dynamic layer with `next` after the checks
// (DynamicBrokerConfig::Check: INVALID_REQUEST). Single node: applied and
// persisted before the answer. Cluster mode: written to ZooKeeper by the
// control plane (/config/brokers/<default> or /<id>) and applied by every
// broker from its next cluster state; blocks until ZooKeeper has it
// (REQUEST_TIMED_OUT after 30 s) — call it off the event loop.
Status ReplaceBrokerLayer(const BrokerContext& ctx, const std::string& name, const ConfigMap& next,
                          bool validate_only);

}  // namespace headrace::broker
