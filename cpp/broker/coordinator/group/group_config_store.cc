#include "broker/coordinator/group/group_config_store.h"

#include "broker/base/json.h"
#include "broker/base/kafka_error.h"
#include "common/logging.h"

namespace headrace::broker::group {
namespace {

// {"<group>": {"<key>": "<value>"}} -> table; non-string values are skipped.
GroupConfigTable TableOf(const json::Value& groups) {
  GroupConfigTable out;
  if (!groups.is_object()) return out;
  for (const auto& [group, configs] : groups.as_object()) {
    if (!configs.is_object()) continue;
    ConfigMap m;
    for (const auto& [k, v] : configs.as_object()) {
      if (v.is_string()) m[k] = v.as_string();
    }
    if (!m.empty()) out[group] = std::move(m);
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<GroupConfigStore>> GroupConfigStore::Open(const std::string& data_dir,
                                                                 FileEnv* env) {
  std::unique_ptr<GroupConfigStore> s(
      new GroupConfigStore(data_dir, env ? env : FileEnv::Default()));
  if (data_dir.empty()) return s;
  HR_ASSIGN_OR_RETURN(std::optional<std::string> text,
                      ReadFileIfExists(*s->env_, data_dir + "/" + kFileName));
  if (!text) return s;
  auto parsed = json::Parse(*text);
  if (!parsed.ok()) {
    return Status::Corruption(std::string(kFileName) + ": " + parsed.status().message());
  }
  const json::Value* groups = parsed->Find("groups");
  if (groups != nullptr) s->table_ = TableOf(*groups);
  return s;
}

ConfigMap GroupConfigStore::Get(const std::string& group) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = table_.find(group);
  return it == table_.end() ? ConfigMap{} : it->second;
}

GroupConfigTable GroupConfigStore::All() const {
  std::lock_guard<std::mutex> lock(mu_);
  return table_;
}

Status GroupConfigStore::Persist(const GroupConfigTable& table) {
  if (dir_.empty()) return Status::OK();
  json::Object groups;
  for (const auto& [group, configs] : table) {
    json::Object o;
    for (const auto& [k, v] : configs) o[k] = json::Value(v);
    groups[group] = json::Value(std::move(o));
  }
  json::Object root{{"version", int64_t{1}}, {"groups", json::Value(std::move(groups))}};
  Status s = WriteFileAtomically(*env_, dir_, kFileName, json::Write(json::Value(std::move(root))));
  if (!s.ok()) {
    return KafkaStatus(KafkaError::kKafkaStorageError, kFileName + (": " + s.ToString()));
  }
  return Status::OK();
}

Status GroupConfigStore::Replace(const std::string& group, const ConfigMap& overrides) {
  std::lock_guard<std::mutex> change(change_mu_);
  GroupConfigTable next = All();
  if (overrides.empty()) {
    if (next.erase(group) == 0) return Status::OK();
  } else {
    next[group] = overrides;
  }
  HR_RETURN_IF_ERROR(Persist(next));
  std::lock_guard<std::mutex> lock(mu_);
  table_ = std::move(next);
  return Status::OK();
}

Status GroupConfigStore::ReplaceAll(GroupConfigTable table) {
  std::lock_guard<std::mutex> change(change_mu_);
  if (All() == table) return Status::OK();
  HR_RETURN_IF_ERROR(Persist(table));
  std::lock_guard<std::mutex> lock(mu_);
  table_ = std::move(table);
  return Status::OK();
}

void ApplyClusterGroupConfigs(std::string_view state_json, GroupConfigStore* store) {
  auto root = json::Parse(state_json);
  if (!root.ok()) return;  // the cluster view's parser reports it
  const json::Value* groups = root->Find("group_configs");
  if (groups == nullptr || !groups->is_object()) return;
  if (Status st = store->ReplaceAll(TableOf(*groups)); !st.ok()) {
    HR_LOG(kWarn) << "cluster state: group configs not saved: " << st.message();
  }
}

}  // namespace headrace::broker::group
