// TopicRegistry: start-up, lookups and shutdown. The admin operations are in
// topic_admin.cc.
#include "broker/topic_registry.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "broker/kafka_error.h"
#include "broker/partition_dir.h"
#include "common/logging.h"

namespace headrace::broker {

namespace fs = std::filesystem;

TopicRegistry::TopicRegistry(Options options)
    : config_(std::move(options.config)),
      defaults_(std::make_shared<const TopicDefaults>(WithDynamicLayers(
          config_.topic_defaults(), options.dynamic_topic_defaults.first,
          options.dynamic_topic_defaults.second))),
      store_(options.store),
      services_(options.services),
      log_factory_(std::move(options.log_factory)),
      post_admin_job_(std::move(options.post_admin_job)) {}

TopicRegistry::~TopicRegistry() { (void)Close(); }

std::shared_ptr<const TopicDefaults> TopicRegistry::defaults() const {
  std::lock_guard<std::mutex> lock(defaults_mu_);
  return defaults_;
}

void TopicRegistry::SetDynamicTopicDefaults(const ConfigMap& cluster_default,
                                            const ConfigMap& per_broker) {
  std::lock_guard<std::mutex> admin(admin_mu_);
  auto next = std::make_shared<const TopicDefaults>(
      WithDynamicLayers(config_.topic_defaults(), cluster_default, per_broker));
  {
    std::lock_guard<std::mutex> lock(defaults_mu_);
    defaults_ = next;
  }
  if (closed_) return;
  // Every topic takes the new defaults for the keys it does not override.
  for (const auto& topic : ListTopics()) {
    auto settings = ApplyTopicConfigs(*next, topic->overrides);
    if (!settings.ok()) continue;  // stored overrides were validated; cannot happen
    auto updated = std::make_shared<Topic>(*topic);
    updated->settings = settings.value();
    for (const auto& p : updated->partitions) {
      if (p) p->SetSettings(updated->settings);
    }
    Publish(std::move(updated));
  }
}

Result<std::unique_ptr<TopicRegistry>> TopicRegistry::Open(Options options) {
  if (!options.store) return Status::InvalidArgument("TopicRegistry needs a MetadataStore");
  HR_RETURN_IF_ERROR(options.config.Validate());
  std::unique_ptr<TopicRegistry> r(new TopicRegistry(std::move(options)));
  HR_RETURN_IF_ERROR(r->Load());
  return r;
}

Status TopicRegistry::Load() {
  HR_ASSIGN_OR_RETURN(identity_, store_->Bootstrap({config_.cluster_id, config_.node_id}));
  std::error_code ec;
  fs::create_directories(config_.data_dir, ec);
  if (ec) return Status::IOError("create " + config_.data_dir + ": " + ec.message());
  HR_ASSIGN_OR_RETURN(std::vector<TopicMetadata> topics, store_->LoadTopics());
  HR_RETURN_IF_ERROR(CleanDataDir(topics));
  for (const TopicMetadata& t : topics) {
    auto settings = ApplyTopicConfigs(*defaults(), t.configs);
    if (!settings.ok()) {
      return Status::Corruption("stored configs of topic " + t.name + ": " +
                                settings.status().message());
    }
    std::vector<std::shared_ptr<Partition>> parts;
    if (config_.cluster_mode()) {
      HR_ASSIGN_OR_RETURN(parts, OpenReplicas(t.name, t.id, settings.value(), t.partition_count));
    } else {
      HR_ASSIGN_OR_RETURN(parts, OpenPartitions(t.name, t.id, settings.value(), 0, t.partition_count));
    }
    for (const auto& p : parts) {
      if (!p) continue;
      const RecoveryReport& rr = p->recovery_report();
      if (rr.truncated_bytes > 0) {
        startup_.truncated.push_back(p->topic_partition().ToString() + ": " + rr.reason);
        HR_LOG(kWarn) << "recovery cut " << rr.truncated_bytes << " bytes off "
                      << p->topic_partition().ToString() << " at offset "
                      << rr.truncated_at.value() << ": " << rr.reason;
      }
    }
    for (const auto& p : parts) startup_.partitions += p ? 1 : 0;
    auto topic = std::make_shared<Topic>();
    topic->name = t.name;
    topic->id = t.id;
    topic->overrides = t.configs;
    topic->settings = settings.value();
    topic->partitions = std::move(parts);
    Publish(std::move(topic));
    ++startup_.topics;
  }
  return Status::OK();
}

Status TopicRegistry::CleanDataDir(const std::vector<TopicMetadata>& topics) {
  std::map<std::string, int32_t> counts;
  for (const auto& t : topics) counts[t.name] = t.partition_count;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(config_.data_dir, ec)) {
    if (!entry.is_directory()) continue;
    std::string name = entry.path().filename().string();
    if (IsDeletedPartitionDirName(name)) {
      deleter_.Enqueue(entry.path().string());
      ++startup_.deleted_dirs_resumed;
      continue;
    }
    auto tp = ParsePartitionDirName(name);
    if (!tp) continue;
    auto it = counts.find(tp->topic);
    if (it == counts.end() || tp->partition >= it->second) {
      HR_LOG(kWarn) << "removing partition directory without metadata: " << name;
      RetireDir(*tp);  // left behind by a crash in the middle of a delete
      ++startup_.stray_dirs_removed;
    }
  }
  if (ec) return Status::IOError("list " + config_.data_dir + ": " + ec.message());
  return Status::OK();
}

Result<std::vector<std::shared_ptr<Partition>>> TopicRegistry::OpenPartitions(
    const std::string& name, const Uuid& id, const TopicSettings& settings, int32_t from,
    int32_t to) {
  std::vector<std::shared_ptr<Partition>> out;
  for (int32_t p = from; p < to; ++p) {
    TopicPartition tp{name, p};
    auto part = Partition::Open(config_.data_dir, tp, id, settings, services_, log_factory_);
    if (!part.ok()) {
      for (auto& opened : out) (void)opened->Close();
      return KafkaStatus(KafkaError::kKafkaStorageError,
                         "open " + tp.ToString() + ": " + part.status().ToString());
    }
    out.push_back(std::move(part).value());
  }
  return out;
}

void TopicRegistry::RetireDir(const TopicPartition& tp) {
  std::string live = PartitionDirPath(config_.data_dir, tp);
  std::error_code ec;
  if (!fs::exists(live, ec)) return;
  std::string dead = config_.data_dir + "/" + DeletedPartitionDirName(tp, Uuid::Random().ToHex());
  fs::rename(live, dead, ec);
  deleter_.Enqueue(ec ? live : dead);
}

void TopicRegistry::Publish(std::shared_ptr<const Topic> topic) {
  std::unique_lock<std::shared_mutex> lock(map_mu_);
  by_id_[topic->id] = topic;
  by_name_[topic->name] = std::move(topic);
}

std::shared_ptr<const Topic> TopicRegistry::FindTopic(std::string_view name) const {
  std::shared_lock<std::shared_mutex> lock(map_mu_);
  auto it = by_name_.find(name);
  if (it != by_name_.end()) return it->second;
  auto in = internal_.find(name);  // only after a miss: off the hot path
  return in == internal_.end() ? nullptr : in->second;
}

std::shared_ptr<const Topic> TopicRegistry::FindTopicById(const Uuid& id) const {
  std::shared_lock<std::shared_mutex> lock(map_mu_);
  auto it = by_id_.find(id);
  if (it != by_id_.end()) return it->second;
  for (const auto& [name, t] : internal_) {
    if (t->id == id) return t;
  }
  return nullptr;
}

std::shared_ptr<Partition> TopicRegistry::FindPartition(std::string_view topic,
                                                        int32_t partition) const {
  std::shared_lock<std::shared_mutex> lock(map_mu_);
  const Topic* t = nullptr;
  if (auto it = by_name_.find(topic); it != by_name_.end()) {
    t = it->second.get();
  } else if (auto in = internal_.find(topic); in != internal_.end()) {  // only after a miss
    t = in->second.get();
  }
  if (t == nullptr || partition < 0 || partition >= t->partition_count()) return nullptr;
  return t->partitions[partition];
}

namespace {

// A fixed id per internal topic name (FNV-1a of the name, two seeds), so
// clients that cache topic ids see the same one after a restart.
Uuid InternalTopicId(const std::string& name) {
  auto fnv = [&](uint64_t h) {
    for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ull;
    return h;
  };
  return Uuid::FromHalves(fnv(0xcbf29ce484222325ull), fnv(0x84222325cbf29ce4ull));
}

}  // namespace

void TopicRegistry::SetInternalTopic(const std::string& name, std::shared_ptr<Partition> partition,
                                     const ConfigMap& describe_as) {
  std::unique_lock<std::shared_mutex> lock(map_mu_);
  if (!partition) {
    internal_.erase(name);
    return;
  }
  auto t = std::make_shared<Topic>();
  t->name = name;
  t->id = InternalTopicId(name);
  t->overrides = describe_as;
  t->partitions = {std::move(partition)};
  t->internal = true;
  internal_[name] = std::move(t);
}

std::vector<std::shared_ptr<const Topic>> TopicRegistry::InternalTopics() const {
  std::shared_lock<std::shared_mutex> lock(map_mu_);
  std::vector<std::shared_ptr<const Topic>> out;
  for (const auto& [name, t] : internal_) out.push_back(t);
  return out;
}

Result<std::shared_ptr<Partition>> TopicRegistry::GetPartition(std::string_view topic,
                                                               int32_t partition) const {
  auto p = FindPartition(topic, partition);
  if (!p && config_.cluster_mode() && FindTopic(topic) && partition >= 0 &&
      partition < FindTopic(topic)->partition_count()) {
    return KafkaStatus(KafkaError::kNotLeaderOrFollower,
                       "This broker holds no replica of " + std::string(topic) + "-" +
                           std::to_string(partition));
  }
  if (!p) {
    return KafkaStatus(KafkaError::kUnknownTopicOrPartition,
                       "This server does not host this topic-partition: " + std::string(topic) +
                           "-" + std::to_string(partition));
  }
  return p;
}

std::vector<std::shared_ptr<const Topic>> TopicRegistry::ListTopics() const {
  std::vector<std::shared_ptr<const Topic>> out;
  {
    std::shared_lock<std::shared_mutex> lock(map_mu_);
    out.reserve(by_name_.size());
    for (const auto& [name, t] : by_name_) out.push_back(t);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a->name < b->name; });
  return out;
}

int64_t TopicRegistry::HostedPartitions() const {
  std::shared_lock<std::shared_mutex> lock(map_mu_);
  int64_t n = 0;
  for (const auto& [name, t] : by_name_) n += t->hosted_count();
  return n;
}

std::vector<std::shared_ptr<Partition>> TopicRegistry::AllPartitions() const {
  std::vector<std::shared_ptr<Partition>> out;
  std::shared_lock<std::shared_mutex> lock(map_mu_);
  for (const auto& [name, t] : by_name_) {
    for (const auto& p : t->partitions) {
      if (p) out.push_back(p);
    }
  }
  return out;
}

Status TopicRegistry::CheckOpenLocked() const {
  if (closed_) return Status::Closed("topic registry is closed");
  return Status::OK();
}

Status TopicRegistry::Close() {
  std::lock_guard<std::mutex> admin(admin_mu_);
  if (closed_) return Status::OK();
  closed_ = true;
  deleter_.Stop();
  Status first;
  for (const auto& p : AllPartitions()) {
    Status s = p->Close();
    if (!s.ok() && first.ok()) first = s;
  }
  return first;
}

}  // namespace headrace::broker
