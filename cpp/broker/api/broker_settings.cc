// DescribeBrokerSettings (headrace/broker_settings.h): the BrokerConfig keys
// as DescribeConfigs reports them for the BROKER resource
// (broker_config_entries.h), plus the group coordinator's keys and the
// network backend, which Broker::Create takes out before BrokerConfig.
#include "headrace/broker_settings.h"

#include <algorithm>
#include <initializer_list>

#include "broker/api/broker_config_entries.h"
#include "broker/broker_config.h"
#include "broker/group/group_config.h"
#include "broker/metrics_config.h"
#include "broker/txn/txn_config.h"
#include "headrace/broker.h"

namespace headrace {
namespace {

using broker::BrokerConfig;
using broker::group::GroupConfig;

constexpr const char* kBackendKey = "headrace.network.backend";  // as in broker.cc

// Other keys that set a BrokerConfig setting, in the order BrokerConfig
// lets them win (the setting's own name first).
std::vector<std::string> KeysSetting(const std::string& name) {
  if (name == "node.id" || name == "broker.id") return {"node.id", "broker.id"};
  if (name == "log.dirs") return {"log.dirs", "log.dir"};
  if (name == "log.retention.ms") {
    return {"log.retention.ms", "log.retention.minutes", "log.retention.hours"};
  }
  if (name == "log.roll.ms") return {"log.roll.ms", "log.roll.hours"};
  return {name};
}

std::string FirstPresent(const std::vector<std::string>& keys,
                         const std::map<std::string, std::string>& settings) {
  for (const std::string& k : keys)
    if (settings.count(k)) return k;
  return "";
}

// The settings of one family (GroupConfig, TxnConfig), current and default.
template <typename Config>
void AddFamilySettings(const Config& config, const std::map<std::string, std::string>& settings,
                       std::vector<BrokerSetting>* out) {
  const auto defaults = Config().Describe();
  const auto now = config.Describe();
  for (size_t i = 0; i < now.size(); ++i) {  // same keys, same order
    out->push_back({now[i].name, now[i].value, defaults[i].value, now[i].doc,
                    FirstPresent({now[i].name}, settings)});
  }
}

}  // namespace

Result<std::vector<BrokerSetting>> DescribeBrokerSettings(
    const std::map<std::string, std::string>& settings) {
  HR_RETURN_IF_ERROR(Broker::Create(settings).status());  // the one validation
  std::map<std::string, std::string> props = settings;
  std::string backend = "auto";
  if (auto it = props.find(kBackendKey); it != props.end()) {
    backend = it->second;
    props.erase(it);
  }
  GroupConfig group;
  HR_RETURN_IF_ERROR(group.Extract(props));
  broker::txn::TxnConfig txns;
  HR_RETURN_IF_ERROR(txns.Extract(props));
  broker::MetricsConfig metrics;
  HR_RETURN_IF_ERROR(metrics.Extract(props));
  BrokerConfig config;
  HR_RETURN_IF_ERROR(config.SetAll(props));

  std::vector<BrokerSetting> out;
  for (const broker::ConfigEntry& e : broker::DescribeBrokerConfigs(
           config, config.effective_advertised_host(), config.effective_advertised_port())) {
    BrokerSetting s{e.name, e.value.value_or(""), "", e.documentation, ""};
    if (!e.synonyms.empty()) s.default_value = e.synonyms.back().value.value_or("");
    if (e.source != broker::ConfigSource::kDefaultConfig) {
      s.set_by = FirstPresent(KeysSetting(e.name), settings);
    }
    out.push_back(std::move(s));
  }
  // Not a DescribeConfigs row (the serving broker reports it in Metadata).
  out.push_back({"cluster.id", config.cluster_id, "",
                 "Cluster id; empty = the stored one, or a new one at first start.",
                 FirstPresent({"cluster.id"}, settings)});
  AddFamilySettings(group, settings, &out);
  AddFamilySettings(txns, settings, &out);
  AddFamilySettings(metrics, settings, &out);
  out.push_back({kBackendKey, backend, "auto", "Network I/O backend: auto, io_uring or epoll.",
                 FirstPresent({kBackendKey}, settings)});
  std::sort(out.begin(), out.end(),
            [](const BrokerSetting& a, const BrokerSetting& b) { return a.name < b.name; });
  return out;
}

}  // namespace headrace
