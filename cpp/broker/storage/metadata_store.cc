#include "broker/storage/metadata_store.h"

#include "broker/base/json.h"
#include "broker/base/kafka_error.h"

namespace headrace::broker {
namespace {

Status Shape(const std::string& what) {
  return Status::Corruption("metadata file: " + what);
}

Result<TopicMetadata> DecodeTopic(const json::Value& v) {
  const json::Value* name = v.Find("name");
  const json::Value* id = v.Find("topic_id");
  const json::Value* parts = v.Find("partitions");
  const json::Value* configs = v.Find("configs");
  if (!name || !name->is_string() || !id || !id->is_string() || !parts || !parts->is_int() ||
      !configs || !configs->is_object()) {
    return Shape("topic entry needs name, topic_id, partitions, configs");
  }
  TopicMetadata t;
  t.name = name->as_string();
  auto uuid = Uuid::FromBase64(id->as_string());
  if (!uuid.ok()) return Shape("topic " + t.name + ": bad topic_id");
  t.id = uuid.value();
  if (parts->as_int() < 1 || parts->as_int() > INT32_MAX) {
    return Shape("topic " + t.name + ": bad partitions");
  }
  t.partition_count = static_cast<int32_t>(parts->as_int());
  for (const auto& [k, cv] : configs->as_object()) {
    if (!cv.is_string()) return Shape("topic " + t.name + ": config values must be strings");
    t.configs[k] = cv.as_string();
  }
  return t;
}

}  // namespace

std::string EncodeMetadataFile(const ClusterIdentity* identity,
                               const std::map<std::string, TopicMetadata>& topics) {
  json::Object root;
  root["version"] = json::Value(FileMetadataStore::kFormatVersion);
  if (identity) {
    root["cluster_id"] = json::Value(identity->cluster_id);
    root["node_id"] = json::Value(identity->node_id);
  }
  json::Array list;
  for (const auto& [name, t] : topics) {
    json::Object o;
    o["name"] = json::Value(t.name);
    o["topic_id"] = json::Value(t.id.ToBase64());
    o["partitions"] = json::Value(t.partition_count);
    json::Object cfg;
    for (const auto& [k, v] : t.configs) cfg[k] = json::Value(v);
    o["configs"] = json::Value(std::move(cfg));
    list.push_back(json::Value(std::move(o)));
  }
  root["topics"] = json::Value(std::move(list));
  return json::Write(json::Value(std::move(root)));
}

Status DecodeMetadataFile(std::string_view text, bool* has_identity, ClusterIdentity* identity,
                          std::map<std::string, TopicMetadata>* topics) {
  HR_ASSIGN_OR_RETURN(json::Value root, json::Parse(text));
  const json::Value* version = root.Find("version");
  if (!version || !version->is_int()) return Shape("missing version");
  if (version->as_int() != FileMetadataStore::kFormatVersion) {
    return Status::Unsupported("metadata file: format version " +
                               std::to_string(version->as_int()) + " is not supported");
  }
  const json::Value* cid = root.Find("cluster_id");
  const json::Value* nid = root.Find("node_id");
  *has_identity = cid && nid;
  if (*has_identity) {
    if (!cid->is_string() || !nid->is_int()) return Shape("bad cluster_id/node_id");
    identity->cluster_id = cid->as_string();
    identity->node_id = static_cast<int32_t>(nid->as_int());
  }
  const json::Value* list = root.Find("topics");
  if (!list || !list->is_array()) return Shape("missing topics");
  topics->clear();
  for (const json::Value& v : list->as_array()) {
    HR_ASSIGN_OR_RETURN(TopicMetadata t, DecodeTopic(v));
    std::string name = t.name;
    if (!topics->emplace(name, std::move(t)).second) return Shape("duplicate topic " + name);
  }
  return Status::OK();
}

FileMetadataStore::FileMetadataStore(std::string dir, FileEnv* env)
    : dir_(std::move(dir)), path_(dir_ + "/" + kFileName), env_(env) {}

Result<std::unique_ptr<FileMetadataStore>> FileMetadataStore::Open(const std::string& dir,
                                                                   FileEnv* env) {
  if (env == nullptr) env = FileEnv::Default();
  HR_RETURN_IF_ERROR(env->CreateDirs(dir));
  std::unique_ptr<FileMetadataStore> store(new FileMetadataStore(dir, env));
  HR_RETURN_IF_ERROR(store->ReadFile());
  return store;
}

Status FileMetadataStore::ReadFile() {
  std::lock_guard<std::mutex> lock(mu_);
  HR_ASSIGN_OR_RETURN(std::optional<std::string> text, ReadFileIfExists(*env_, path_));
  if (!text) return Status::OK();  // fresh dir
  return DecodeMetadataFile(*text, &has_identity_, &identity_, &topics_);
}

Status FileMetadataStore::WriteLocked() {
  std::string text = EncodeMetadataFile(has_identity_ ? &identity_ : nullptr, topics_);
  return WriteFileAtomically(*env_, dir_, kFileName, text);
}

Result<ClusterIdentity> FileMetadataStore::Bootstrap(const ClusterIdentity& wanted) {
  std::lock_guard<std::mutex> lock(mu_);
  if (has_identity_) {
    if (wanted.node_id != identity_.node_id) {
      return KafkaStatus(KafkaError::kInconsistentClusterId,
                         "configured node.id " + std::to_string(wanted.node_id) +
                             " does not match node id " + std::to_string(identity_.node_id) +
                             " stored in " + path_);
    }
    if (!wanted.cluster_id.empty() && wanted.cluster_id != identity_.cluster_id) {
      return KafkaStatus(KafkaError::kInconsistentClusterId,
                         "configured cluster.id " + wanted.cluster_id +
                             " does not match cluster id " + identity_.cluster_id +
                             " stored in " + path_);
    }
    return identity_;
  }
  identity_ = wanted;
  if (identity_.cluster_id.empty()) identity_.cluster_id = Uuid::Random().ToBase64();
  has_identity_ = true;
  Status s = WriteLocked();
  if (!s.ok()) {
    has_identity_ = false;
    return s;
  }
  return identity_;
}

Result<std::vector<TopicMetadata>> FileMetadataStore::LoadTopics() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TopicMetadata> out;
  for (const auto& [name, t] : topics_) out.push_back(t);
  return out;
}

Status FileMetadataStore::PutTopic(const TopicMetadata& topic) {
  std::lock_guard<std::mutex> lock(mu_);
  auto old = topics_;
  topics_[topic.name] = topic;
  Status s = WriteLocked();
  if (!s.ok()) topics_ = std::move(old);  // memory stays equal to the file
  return s;
}

Status FileMetadataStore::DeleteTopic(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = topics_.find(name);
  if (it == topics_.end()) return Status::NotFound("no topic " + name + " in metadata");
  TopicMetadata removed = it->second;
  topics_.erase(it);
  Status s = WriteLocked();
  if (!s.ok()) topics_.emplace(name, std::move(removed));
  return s;
}

}  // namespace headrace::broker
