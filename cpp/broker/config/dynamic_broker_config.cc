#include "broker/config/dynamic_broker_config.h"

#include "broker/config/broker_config.h"
#include "broker/config/config_table.h"
#include "broker/base/json.h"
#include "broker/base/kafka_error.h"
#include "common/logging.h"

namespace headrace::broker {
namespace {

Status InvalidRequest(const std::string& message) {
  return KafkaStatus(KafkaError::kInvalidRequest, message);
}

json::Value ToJson(const ConfigMap& m) {
  json::Object o;
  for (const auto& [k, v] : m) o[k] = json::Value(v);
  return json::Value(std::move(o));
}

ConfigMap FromJson(const json::Value* v) {
  ConfigMap out;
  if (v == nullptr || !v->is_object()) return out;
  for (const auto& [k, val] : v->as_object()) {
    if (val.is_string()) out[k] = val.as_string();
  }
  return out;
}

}  // namespace

Result<UpdateMode> BrokerKeyUpdateMode(const std::string& key) {
  if (const BrokerKeyInfo* k = FindBrokerKey(key)) return k->mode;
  for (const ConfigFamily& f : ConfigFamilyRegistry()) {
    auto rows = f.describe({});
    if (!rows.ok()) continue;
    for (const FamilySetting& s : *rows)
      if (s.name == key) return s.mode;
  }
  return Status::NotFound("unknown broker config: " + key);
}

Status CheckDynamicBrokerConfig(const std::string& key, const std::string& value,
                                bool cluster_default) {
  auto mode = BrokerKeyUpdateMode(key);
  if (!mode.ok()) return InvalidRequest("Unknown broker config: " + key);
  if (*mode == UpdateMode::kReadOnly) {
    return InvalidRequest("Cannot update these configs dynamically: " + key + " (read-only)");
  }
  if (*mode == UpdateMode::kPerBroker && cluster_default) {
    return InvalidRequest("Cannot update these configs at default cluster level, broker id must "
                          "be specified: " + key);
  }
  Status valid;
  if (FindBrokerKey(key)) {
    BrokerConfig scratch;
    valid = scratch.Set(key, value);
  } else {
    for (const ConfigFamily& f : ConfigFamilyRegistry()) {
      valid = f.validate(key, value);
      if (valid.code() != StatusCode::kNotFound) break;
    }
  }
  if (!valid.ok()) return InvalidRequest("Invalid config value for " + key + ": " + valid.message());
  return Status::OK();
}

std::pair<ConfigMap, ConfigMap> TopicDefaultLayers(const DynamicBrokerLayers& layers) {
  auto topic_layer = [](const ConfigMap& m) {
    ConfigMap out;
    for (const auto& [k, v] : m) {
      const BrokerKeyInfo* info = FindBrokerKey(k);
      if (info && !info->topic_key.empty()) out[info->topic_key] = v;
    }
    return out;
  };
  return {topic_layer(layers.cluster_default), topic_layer(layers.per_broker)};
}

Result<std::unique_ptr<DynamicBrokerConfig>> DynamicBrokerConfig::Open(const std::string& data_dir,
                                                                       FileEnv* env) {
  std::unique_ptr<DynamicBrokerConfig> d(
      new DynamicBrokerConfig(data_dir, env ? env : FileEnv::Default()));
  HR_ASSIGN_OR_RETURN(std::optional<std::string> text,
                      ReadFileIfExists(*d->env_, data_dir + "/" + kFileName));
  if (!text) return d;
  auto parsed = json::Parse(*text);
  if (!parsed.ok()) {
    return Status::Corruption(std::string(kFileName) + ": " + parsed.status().message());
  }
  DynamicBrokerLayers layers{FromJson(parsed->Find("default")), FromJson(parsed->Find("broker"))};
  for (ConfigMap* layer : {&layers.cluster_default, &layers.per_broker}) {
    for (auto it = layer->begin(); it != layer->end();) {
      Status s = CheckDynamicBrokerConfig(it->first, it->second,
                                          layer == &layers.cluster_default);
      if (s.ok()) {
        ++it;
        continue;
      }
      HR_LOG(kWarn) << kFileName << ": ignoring " << it->first << ": " << s.message();
      it = layer->erase(it);
    }
  }
  d->layers_ = std::move(layers);
  return d;
}

DynamicBrokerLayers DynamicBrokerConfig::layers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return layers_;
}

Status DynamicBrokerConfig::Persist(const DynamicBrokerLayers& layers) {
  json::Object root{{"version", int64_t{1}},
                    {"default", ToJson(layers.cluster_default)},
                    {"broker", ToJson(layers.per_broker)}};
  Status s = WriteFileAtomically(*env_, dir_, kFileName, json::Write(json::Value(std::move(root))));
  if (!s.ok()) return KafkaStatus(KafkaError::kKafkaStorageError, kFileName + (": " + s.ToString()));
  return Status::OK();
}

Status DynamicBrokerConfig::Check(bool cluster_default, const ConfigMap& next) {
  for (const auto& [k, v] : next) HR_RETURN_IF_ERROR(CheckDynamicBrokerConfig(k, v, cluster_default));
  return Status::OK();
}

Status DynamicBrokerConfig::Replace(bool cluster_default, const ConfigMap& next,
                                    bool validate_only) {
  HR_RETURN_IF_ERROR(Check(cluster_default, next));
  if (validate_only) return Status::OK();
  std::lock_guard<std::mutex> change(change_mu_);
  DynamicBrokerLayers updated = layers();
  (cluster_default ? updated.cluster_default : updated.per_broker) = next;
  return CommitLocked(updated);
}

void DynamicBrokerConfig::ApplyFromCluster(DynamicBrokerLayers layers) {
  for (ConfigMap* layer : {&layers.cluster_default, &layers.per_broker}) {
    for (auto it = layer->begin(); it != layer->end();) {
      Status s = CheckDynamicBrokerConfig(it->first, it->second,
                                          layer == &layers.cluster_default);
      if (s.ok()) {
        ++it;
        continue;
      }
      HR_LOG(kWarn) << "dynamic broker config from ZooKeeper ignored: " << s.message();
      it = layer->erase(it);
    }
  }
  std::lock_guard<std::mutex> change(change_mu_);
  DynamicBrokerLayers current = this->layers();
  if (current.cluster_default == layers.cluster_default &&
      current.per_broker == layers.per_broker) {
    return;
  }
  if (Status s = CommitLocked(layers); !s.ok()) {
    HR_LOG(kWarn) << "dynamic broker configs from ZooKeeper: " << s.message();
  }
}

namespace {

// "key=old->new" for each key `before` and `after` differ in; secrets hidden.
std::string DescribeChanges(const ConfigMap& before, const ConfigMap& after) {
  const auto shown = [](const std::string& key, const std::string* v) -> std::string {
    if (v == nullptr) return "(default)";
    return key.find("password") != std::string::npos ? "[hidden]" : *v;
  };
  std::string out;
  const auto note = [&](const std::string& key) {
    auto b = before.find(key);
    auto a = after.find(key);
    const std::string* bv = b == before.end() ? nullptr : &b->second;
    const std::string* av = a == after.end() ? nullptr : &a->second;
    if (bv && av && *bv == *av) return;
    if (!out.empty()) out += ", ";
    out += key + "=" + shown(key, bv) + "->" + shown(key, av);
  };
  for (const auto& [k, v] : after) note(k);
  for (const auto& [k, v] : before) {
    if (!after.count(k)) note(k);
  }
  return out;
}

}  // namespace

Status DynamicBrokerConfig::CommitLocked(const DynamicBrokerLayers& updated) {
  HR_RETURN_IF_ERROR(Persist(updated));
  std::vector<Subscriber> subscribers;
  DynamicBrokerLayers before;
  {
    std::lock_guard<std::mutex> lock(mu_);
    before = layers_;
    layers_ = updated;
    subscribers = subscribers_;
  }
  for (bool cluster_default : {true, false}) {
    const std::string changes =
        cluster_default ? DescribeChanges(before.cluster_default, updated.cluster_default)
                        : DescribeChanges(before.per_broker, updated.per_broker);
    if (changes.empty()) continue;
    const char* scope = cluster_default ? "cluster default" : "this broker";
    HR_LOG_TO(kInfo, "headrace.config")
            .With("event", "config_changed").With("resource", "broker")
            .With("scope", scope).With("changes", changes)
        << "dynamic broker config (" << scope << "): " << changes;
  }
  for (const Subscriber& s : subscribers) s(updated);
  return Status::OK();
}

void DynamicBrokerConfig::Subscribe(Subscriber s) {
  std::lock_guard<std::mutex> lock(mu_);
  subscribers_.push_back(std::move(s));
}

}  // namespace headrace::broker
