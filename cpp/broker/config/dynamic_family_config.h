// How a family of broker settings (config_table.h) takes dynamic broker
// configs: declare the keys Kafka lets change at run time with
// `mode = UpdateMode::kClusterWide` (or kPerBroker) in the family's table —
// AlterConfigs on BROKER resources then accepts them, DescribeConfigs shows
// their DYNAMIC_* source, and they persist (file / ZooKeeper) — and apply
// changes by subscribing where the family's live object is built, e.g.:
//
//   state->dynamic_config().Subscribe([this](const DynamicBrokerLayers& l) {
//     cleaner_->Reconfigure(
//         EffectiveFamilyConfig(CleanerKeys(), config_.start_properties, l));
//   });
//
// and by building the object at start from
// EffectiveFamilyConfig(keys, start_properties, dynamic_config().layers()).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "broker/config/config_table.h"
#include "broker/config/dynamic_broker_config.h"

namespace headrace::broker {

// The family's config: built-in defaults, then the start properties, then
// the cluster-wide dynamic default, then this broker's dynamic values (the
// precedence of docs/configuration.md). Values failing the key's checks are
// skipped (they were checked when set).
template <typename Config>
Config EffectiveFamilyConfig(const std::vector<ConfigKey<Config>>& keys,
                             const std::map<std::string, std::string>& start_properties,
                             const DynamicBrokerLayers& layers) {
  Config c;
  for (const std::map<std::string, std::string>* layer :
       {&start_properties, &layers.cluster_default, &layers.per_broker}) {
    for (const ConfigKey<Config>& k : keys) {
      auto it = layer->find(k.name);
      if (it != layer->end()) (void)k.set(c, it->second);
    }
  }
  return c;
}

}  // namespace headrace::broker
