// DescribeBrokerSettings (headrace/broker_settings.h): every broker key as
// DescribeConfigs reports it for the BROKER resource
// (broker_config_entries.h: BrokerConfig's table and every registered
// family), plus the network backend, which Broker::Create takes out first.
#include "headrace/broker_settings.h"

#include <algorithm>
#include <initializer_list>

#include "broker/api/broker_config_entries.h"
#include "broker/config/broker_config.h"
#include "broker/config/config_table.h"
#include "broker/security/sasl/sasl_config.h"
#include "broker/config/ssl_config.h"
#include "headrace/broker.h"

namespace headrace {
namespace {

using broker::BrokerConfig;

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
  // Every registered family's keys go to the family (config_table.h).
  for (const broker::ConfigFamily& f : broker::ConfigFamilyRegistry()) {
    HR_ASSIGN_OR_RETURN(auto rows, f.describe(props));
    for (const broker::FamilySetting& s : rows) props.erase(s.name);
  }
  // Listener-prefixed SASL and SSL keys (listener.name.<l>.[<mech>.]sasl...,
  // listener.name.<l>.ssl...) belong to those families beyond their table rows.
  std::erase_if(props, [](const auto& kv) {
    return broker::sasl::IsSaslConfigKey(kv.first) || broker::SslConfig::IsListenerOverride(kv.first);
  });
  BrokerConfig config;
  HR_RETURN_IF_ERROR(config.SetAll(props));
  config.start_properties = settings;

  std::vector<BrokerSetting> out;
  for (const broker::ConfigEntry& e : broker::DescribeBrokerConfigs(
           config, config.effective_advertised_host(), config.effective_advertised_port())) {
    // Aliases in another unit or spelling are listed under the setting
    // they set (KeysSetting), not as rows of their own.
    if (e.name == "log.dir" || e.name == "log.retention.hours" ||
        e.name == "log.retention.minutes" || e.name == "log.roll.hours") {
      continue;
    }
    BrokerSetting s{e.name, e.value.value_or(""), "", e.documentation, ""};
    if (!e.synonyms.empty()) s.default_value = e.synonyms.back().value.value_or("");
    if (e.source != broker::ConfigSource::kDefaultConfig) {
      s.set_by = FirstPresent(KeysSetting(e.name), settings);
    }
    out.push_back(std::move(s));
  }
  out.push_back({kBackendKey, backend, "auto", "Network I/O backend: auto, io_uring or epoll.",
                 FirstPresent({kBackendKey}, settings)});
  std::sort(out.begin(), out.end(),
            [](const BrokerSetting& a, const BrokerSetting& b) { return a.name < b.name; });
  return out;
}

namespace {

std::string Cell(std::string s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out.empty() ? "" : out;
}

std::string MdCode(const std::string& s) {
  if (s.empty()) return "\"\"";
  std::string out = "`";
  out += Cell(s);
  out += '`';
  return out;
}

}  // namespace

std::string BrokerConfigDocs() {
  std::string out = "<!-- BEGIN GENERATED: headrace config docs -->\n";
  out += "### Broker keys\n\n";
  out += "Update mode: `read-only` keys change only in the start configuration (restart); "
         "`cluster-wide` keys also change at run time through AlterConfigs / "
         "IncrementalAlterConfigs on the BROKER resource `\"\"` (every broker) or "
         "`\"<node id>\"` (one broker); `per-broker` keys only on `\"<node id>\"`; see "
         "\"Dynamic broker configs\".\n\n";
  out += "| Key | Type | Default | Valid values | Update mode | Description |\n";
  out += "|---|---|---|---|---|---|\n";
  struct Line {
    std::string name, type, def, valid, mode, doc;
  };
  std::vector<Line> lines;
  for (const broker::BrokerKeyInfo& k : broker::BrokerConfigKeyTable()) {
    lines.push_back({k.name, broker::ConfigTypeName(k.type), k.default_value, k.valid,
                     broker::UpdateModeName(k.mode), k.doc});
  }
  for (const broker::ConfigFamily& f : broker::ConfigFamilyRegistry()) {
    auto rows = f.describe({});
    if (!rows.ok()) continue;
    for (const broker::FamilySetting& s : *rows) {
      lines.push_back({s.name, broker::ConfigTypeName(s.type), s.default_value, s.valid,
                       broker::UpdateModeName(s.mode), s.doc + " (" + f.name + " family)"});
    }
  }
  std::sort(lines.begin(), lines.end(), [](const Line& a, const Line& b) { return a.name < b.name; });
  for (const Line& l : lines) {
    out += "| `" + l.name + "` | " + l.type + " | " + MdCode(l.def) + " | " + Cell(l.valid) + " | " +
           l.mode + " | " + Cell(l.doc) + " |\n";
  }
  out += "\n### Topic keys\n\n";
  out += "Set per topic in CreateTopics / AlterConfigs / IncrementalAlterConfigs; the broker key "
         "gives the default for topics that do not override it. Effect `no` = accepted, stored "
         "and described, without effect in headrace (\"Keys without effect\" says why).\n\n";
  out += "| Key | Type | Default | Valid values | Broker key | Effect | Description |\n";
  out += "|---|---|---|---|---|---|---|\n";
  for (const broker::TopicConfigKeyInfo& t : broker::TopicConfigKeyTable()) {
    out += "| `" + t.name + "` | " + broker::ConfigTypeName(t.type) + " | " +
           MdCode(t.default_value) + " | " + Cell(t.valid) + " | " +
           (t.broker_name.empty() ? std::string("-") : "`" + t.broker_name + "`") + " | " +
           (t.effective ? "yes" : "no") + " | " + Cell(t.doc) + " |\n";
  }
  out += "<!-- END GENERATED -->\n";
  return out;
}

}  // namespace headrace
