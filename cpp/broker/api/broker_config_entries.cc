#include "broker/api/broker_config_entries.h"

#include <algorithm>
#include <chrono>
#include <future>
#include <memory>
#include <string>

#include "broker/api/cluster_admin.h"
#include "broker/config/broker_config.h"
#include "broker/config/config_table.h"
#include "broker/base/json.h"
#include "broker/base/kafka_error.h"

namespace headrace::broker {
namespace {

std::string JoinListeners(const std::vector<Listener>& listeners) {
  std::string out;
  for (const Listener& l : listeners) {
    if (!out.empty()) out += ',';
    out += l.ToString();
  }
  return out;
}

// The value of a dynamic layer in the stored form (topic defaults are
// normalised as the topic key's values are).
std::string LayerValue(const std::string& topic_key, const std::string& value) {
  return topic_key.empty() ? value : NormalizeTopicConfigValue(topic_key, value);
}

// One entry: the layers that set `name` decide value and source.
ConfigEntry Entry(const std::string& name, const std::string& topic_key, std::string static_value,
                  std::string default_value, bool set_at_start, ConfigType type, UpdateMode mode,
                  std::string doc, const DynamicBrokerLayers& dynamic) {
  ConfigEntry e;
  e.name = name;
  e.read_only = mode == UpdateMode::kReadOnly;
  e.type = type;
  e.sensitive = type == ConfigType::kPassword;  // DescribeConfigs answers null (sasl.jaas.config)
  e.documentation = std::move(doc);
  if (auto it = dynamic.per_broker.find(name); it != dynamic.per_broker.end()) {
    e.synonyms.push_back({name, LayerValue(topic_key, it->second), ConfigSource::kDynamicBrokerConfig});
  }
  if (auto it = dynamic.cluster_default.find(name); it != dynamic.cluster_default.end()) {
    e.synonyms.push_back(
        {name, LayerValue(topic_key, it->second), ConfigSource::kDynamicDefaultBrokerConfig});
  }
  const bool dynamic_layer = !e.synonyms.empty();
  if (set_at_start) e.synonyms.push_back({name, static_value, ConfigSource::kStaticBrokerConfig});
  e.synonyms.push_back({name, std::move(default_value), ConfigSource::kDefaultConfig});
  // Without a dynamic layer the value is the running one (listeners with
  // their resolved port), whatever set it.
  e.value = dynamic_layer ? e.synonyms.front().value : std::optional<std::string>(static_value);
  e.source = e.synonyms.front().source;
  e.is_default = e.source == ConfigSource::kDefaultConfig;
  return e;
}

}  // namespace

std::vector<ConfigEntry> DescribeBrokerConfigs(const BrokerContext& ctx, bool cluster_default_only) {
  DynamicBrokerLayers dynamic = ctx.state->dynamic_config().layers();
  auto all = DescribeBrokerConfigs(ctx.config(), ctx.advertised_host, ctx.advertised_port.load(),
                                   dynamic);
  if (!cluster_default_only) return all;
  std::vector<ConfigEntry> out;
  for (ConfigEntry& e : all) {
    if (!dynamic.cluster_default.count(e.name)) continue;
    // Only the default layer itself (and the built-in default below it).
    auto& syn = e.synonyms;
    syn.erase(std::remove_if(syn.begin(), syn.end(),
                             [](const ConfigSynonym& s) {
                               return s.source != ConfigSource::kDynamicDefaultBrokerConfig &&
                                      s.source != ConfigSource::kDefaultConfig;
                             }),
              syn.end());
    e.value = syn.front().value;
    e.source = syn.front().source;
    e.is_default = false;
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<ConfigEntry> DescribeBrokerConfigs(const BrokerConfig& config,
                                               const std::string& advertised_host,
                                               int32_t advertised_port,
                                               const DynamicBrokerLayers& dynamic) {
  std::vector<ConfigEntry> out;
  for (const BrokerKeyInfo& k : BrokerConfigKeyTable()) {
    std::string value = BrokerConfigValue(config, k.name).value_or("");
    if (k.name == "listeners") {
      std::vector<Listener> listening = config.listeners;
      if (listening.front().port == 0 && config.advertised_listeners.empty()) {
        listening.front().port = advertised_port;  // the port the OS picked
      }
      value = JoinListeners(listening);
    } else if (k.name == "advertised.listeners") {
      Listener advertised = config.advertised();
      advertised.host = advertised_host;
      advertised.port = advertised_port;
      value = advertised.ToString();
    }
    out.push_back(Entry(k.name, k.topic_key, std::move(value), k.default_value,
                        config.IsSet(k.name), k.type, k.mode, k.doc, dynamic));
  }
  for (const ConfigFamily& family : ConfigFamilyRegistry()) {
    auto rows = family.describe(config.start_properties);
    if (!rows.ok()) continue;  // validated at start
    for (const FamilySetting& s : *rows) {
      out.push_back(Entry(s.name, "", s.value, s.default_value, s.set_at_start, s.type, s.mode,
                          s.doc, dynamic));
    }
  }
  std::sort(out.begin(), out.end(),
            [](const ConfigEntry& a, const ConfigEntry& b) { return a.name < b.name; });
  return out;
}

Status ReplaceBrokerLayer(const BrokerContext& ctx, const std::string& name, const ConfigMap& next,
                          bool validate_only) {
  const bool cluster_default = name.empty();
  // advertised.listeners must name this broker's listeners; only the broker
  // itself knows them (a change for another id is checked when it applies).
  if (auto it = next.find("advertised.listeners");
      it != next.end() && !cluster_default && name == std::to_string(ctx.node_id)) {
    if (auto parsed = ctx.config().ParseAdvertisedListeners(it->second); !parsed.ok()) {
      return KafkaStatus(KafkaError::kInvalidRequest,
                         "Invalid config value for advertised.listeners: " + parsed.status().message());
    }
  }
  ClusterState* cluster = ctx.state->cluster();
  if (cluster == nullptr) {
    return ctx.state->dynamic_config().Replace(cluster_default, next, validate_only);
  }
  HR_RETURN_IF_ERROR(DynamicBrokerConfig::Check(cluster_default, next));
  if (validate_only) return Status::OK();
  json::Object configs;
  for (const auto& [k, v] : next) configs[k] = json::Value(v);
  json::Object payload{{"entity", cluster_default ? std::string("<default>") : name},
                       {"configs", json::Value(std::move(configs))}};
  return CallControlPlane(ctx, "alter_broker_configs", std::move(payload));
}

}  // namespace headrace::broker
