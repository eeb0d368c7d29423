// TopicRegistry admin operations: CreateTopics, DeleteTopics,
// CreatePartitions, AlterConfigs, IncrementalAlterConfigs, DescribeConfigs.
#include <filesystem>

#include "broker/base/kafka_error.h"
#include "broker/partition/topic_name.h"
#include "broker/topics/topic_registry.h"
#include "common/logging.h"

namespace headrace::broker {

namespace {

Status UnknownTopic(const std::string& name) {
  return KafkaStatus(KafkaError::kUnknownTopicOrPartition,
                     "This server does not host topic " + name);
}

// Broker count available for replicas; a single node for now.
constexpr int kLiveBrokers = 1;

}  // namespace

Status TopicRegistry::CheckPartitionLimits(int64_t adding, int32_t budget) const {
  const int32_t per_request = config_.max_partitions_per_request;
  if (budget < 0) budget = per_request;
  if (adding > budget) {
    return KafkaStatus(KafkaError::kPolicyViolation,
                       "Creating " + std::to_string(adding) +
                           " partitions exceeds headrace.max.partitions.per.request (" +
                           std::to_string(per_request) + " per request; " +
                           std::to_string(budget) + " left in this request).");
  }
  int64_t hosted = HostedPartitions();
  if (hosted + adding > config_.max_partitions) {
    return KafkaStatus(KafkaError::kPolicyViolation,
                       "Creating " + std::to_string(adding) + " partitions would exceed "
                       "headrace.max.partitions (" + std::to_string(config_.max_partitions) +
                           "); this broker hosts " + std::to_string(hosted) + ".");
  }
  return Status::OK();
}

Status TopicRegistry::ValidateCreate(const CreateTopicRequest& r, int32_t* partitions, int16_t* rf,
                                     TopicSettings* settings) const {
  *partitions = r.num_partitions == -1 ? config_.num_partitions : r.num_partitions;
  if (*partitions < 1) {
    return KafkaStatus(KafkaError::kInvalidPartitions, "Number of partitions must be larger than 0.");
  }
  if (*partitions > kMaxPartitionsPerTopic) {
    return KafkaStatus(KafkaError::kInvalidPartitions,
                       "Number of partitions must be at most " +
                           std::to_string(kMaxPartitionsPerTopic) + ".");
  }
  *rf = r.replication_factor == -1 ? config_.default_replication_factor : r.replication_factor;
  if (*rf < 1) {
    return KafkaStatus(KafkaError::kInvalidReplicationFactor,
                       "Replication factor must be larger than 0.");
  }
  if (*rf > kLiveBrokers) {
    return KafkaStatus(KafkaError::kInvalidReplicationFactor,
                       "Replication factor: " + std::to_string(*rf) +
                           " larger than available brokers: " + std::to_string(kLiveBrokers) + ".");
  }
  HR_ASSIGN_OR_RETURN(*settings, ApplyTopicConfigs(*defaults(), r.configs));
  return Status::OK();
}

Result<CreatedTopic> TopicRegistry::CreateTopic(const CreateTopicRequest& r) {
  HR_RETURN_IF_ERROR(ValidateTopicName(r.name));
  std::lock_guard<std::mutex> admin(admin_mu_);
  HR_RETURN_IF_ERROR(CheckOpenLocked());
  if (FindTopic(r.name)) {
    return KafkaStatus(KafkaError::kTopicAlreadyExists, "Topic '" + r.name + "' already exists.");
  }
  for (const auto& t : ListTopics()) {
    if (TopicNamesCollide(t->name, r.name)) {
      return KafkaStatus(KafkaError::kInvalidTopicException,
                         "Topic '" + r.name + "' collides with existing topic: " + t->name);
    }
  }
  CreatedTopic out;
  TopicSettings settings;
  HR_RETURN_IF_ERROR(ValidateCreate(r, &out.num_partitions, &out.replication_factor, &settings));
  HR_RETURN_IF_ERROR(CheckPartitionLimits(out.num_partitions, r.partition_budget));
  ConfigMap overrides;
  for (const auto& [k, v] : r.configs) overrides[k] = NormalizeTopicConfigValue(k, v);
  out.configs = DescribeTopicConfigs(*defaults(), overrides);
  if (r.validate_only) return out;

  TopicMetadata meta{r.name, Uuid::Random(), out.num_partitions, overrides};
  while (FindTopicById(meta.id)) meta.id = Uuid::Random();
  Status stored = store_->PutTopic(meta);
  if (!stored.ok()) {
    return KafkaStatus(KafkaError::kKafkaStorageError, "metadata: " + stored.ToString());
  }
  for (int32_t p = 0; p < out.num_partitions; ++p) RetireDir({r.name, p});  // stale data
  auto parts = OpenPartitions(r.name, meta.id, settings, 0, out.num_partitions);
  if (!parts.ok()) {
    (void)store_->DeleteTopic(r.name);
    for (int32_t p = 0; p < out.num_partitions; ++p) RetireDir({r.name, p});
    return parts.status();
  }
  auto topic = std::make_shared<Topic>();
  topic->name = r.name;
  topic->id = meta.id;
  topic->overrides = std::move(overrides);
  topic->settings = settings;
  topic->partitions = std::move(parts).value();
  Publish(topic);
  out.id = meta.id;
  HR_LOG_TO(kInfo, "headrace.topic")
          .With("event", "topic_created").With("topic", r.name)
          .With("topic_id", meta.id.ToBase64()).With("partitions", out.num_partitions)
          .With("replication_factor", out.replication_factor)
      << "created topic " << r.name << " (id " << meta.id.ToBase64() << ", "
      << out.num_partitions << " partitions, replication factor " << out.replication_factor
      << ")";
  return out;
}

namespace {

// Admin changes to a coordinator's log served as an internal topic.
Status RefuseInternal(const Topic& topic) {
  return KafkaStatus(KafkaError::kInvalidTopicException,
                     "Topic " + topic.name + " is internal: its coordinator owns it.");
}

}  // namespace

Status TopicRegistry::DeleteTopic(const std::string& name) {
  std::lock_guard<std::mutex> admin(admin_mu_);
  HR_RETURN_IF_ERROR(CheckOpenLocked());
  auto topic = FindTopic(name);
  if (!topic) return UnknownTopic(name);
  if (topic->internal) return RefuseInternal(*topic);
  Status s = store_->DeleteTopic(name);
  if (!s.ok()) return KafkaStatus(KafkaError::kKafkaStorageError, "metadata: " + s.ToString());
  {
    std::unique_lock<std::shared_mutex> lock(map_mu_);
    by_name_.erase(name);
    by_id_.erase(topic->id);
  }
  // Requests holding a Partition now get Closed (NOT_LEADER_OR_FOLLOWER).
  // Not flushed: the data is deleted (an fsync here stalled every
  // connection of the network thread for ~250 ms per partition).
  for (int32_t i = 0; i < topic->partition_count(); ++i) {
    if (topic->partitions[i]) (void)topic->partitions[i]->Abandon();
    RetireDir({name, i});
  }
  // The renames are not fsynced (that held the network thread 30-100 ms):
  // the deletion is durable in the metadata store, and a directory whose
  // rename a crash undid has no metadata, so the next start retires it.
  HR_LOG_TO(kInfo, "headrace.topic")
          .With("event", "topic_deleted").With("topic", name)
          .With("topic_id", topic->id.ToBase64()).With("partitions", topic->partition_count())
      << "deleted topic " << name << " (id " << topic->id.ToBase64() << ", "
      << topic->partition_count() << " partitions)";
  return Status::OK();
}

Result<std::string> TopicRegistry::DeleteTopicById(const Uuid& id) {
  auto topic = FindTopicById(id);
  if (!topic) {
    return KafkaStatus(KafkaError::kUnknownTopicId, "Topic id " + id.ToBase64() + " does not exist");
  }
  Status s = DeleteTopic(topic->name);
  if (s.ok()) return topic->name;
  if (ToKafkaError(s) == KafkaError::kUnknownTopicOrPartition) {  // deleted meanwhile
    return KafkaStatus(KafkaError::kUnknownTopicId, "Topic id " + id.ToBase64() + " does not exist");
  }
  return s;
}

Status TopicRegistry::CreatePartitions(const std::string& name, int32_t new_total,
                                       bool validate_only, int32_t partition_budget) {
  std::lock_guard<std::mutex> admin(admin_mu_);
  HR_RETURN_IF_ERROR(CheckOpenLocked());
  auto topic = FindTopic(name);
  if (!topic) return UnknownTopic(name);
  if (topic->internal) return RefuseInternal(*topic);
  int32_t current = topic->partition_count();
  if (new_total == current) {
    return KafkaStatus(KafkaError::kInvalidPartitions,
                       "Topic already has " + std::to_string(current) + " partitions.");
  }
  if (new_total < current) {
    return KafkaStatus(KafkaError::kInvalidPartitions,
                       "Topic currently has " + std::to_string(current) +
                           " partitions, which is higher than the requested " +
                           std::to_string(new_total) + ".");
  }
  if (new_total > kMaxPartitionsPerTopic) {
    return KafkaStatus(KafkaError::kInvalidPartitions,
                       "Number of partitions must be at most " +
                           std::to_string(kMaxPartitionsPerTopic) + ".");
  }
  HR_RETURN_IF_ERROR(CheckPartitionLimits(int64_t{new_total} - current, partition_budget));
  if (validate_only) return Status::OK();
  Status s = store_->PutTopic({name, topic->id, new_total, topic->overrides});
  if (!s.ok()) return KafkaStatus(KafkaError::kKafkaStorageError, "metadata: " + s.ToString());
  for (int32_t p = current; p < new_total; ++p) RetireDir({name, p});
  auto added = OpenPartitions(name, topic->id, topic->settings, current, new_total);
  if (!added.ok()) {
    (void)store_->PutTopic({name, topic->id, current, topic->overrides});
    return added.status();
  }
  auto next = std::make_shared<Topic>(*topic);
  for (auto& p : added.value()) next->partitions.push_back(std::move(p));
  Publish(std::move(next));
  HR_LOG_TO(kInfo, "headrace.topic")
          .With("event", "partitions_created").With("topic", name)
          .With("from", current).With("partitions", new_total)
      << "topic " << name << ": partitions " << current << " -> " << new_total;
  return Status::OK();
}

Status TopicRegistry::CommitConfigLocked(const Topic& topic, ConfigMap overrides,
                                         bool validate_only) {
  HR_ASSIGN_OR_RETURN(TopicSettings settings, ApplyTopicConfigs(*defaults(), overrides));
  if (validate_only) return Status::OK();
  Status s = store_->PutTopic({topic.name, topic.id, topic.partition_count(), overrides});
  if (!s.ok()) return KafkaStatus(KafkaError::kKafkaStorageError, "metadata: " + s.ToString());
  auto next = std::make_shared<Topic>(topic);
  next->overrides = std::move(overrides);
  next->settings = settings;
  for (const auto& p : next->partitions) {
    if (p) p->SetSettings(settings);  // null: no local replica (cluster mode)
  }
  std::string text;
  for (const auto& [k, v] : next->overrides) {
    if (!text.empty()) text += ", ";
    text += k + "=" + v;
  }
  Publish(std::move(next));
  HR_LOG_TO(kInfo, "headrace.config")
          .With("event", "config_changed").With("resource", "topic").With("topic", topic.name)
          .With("overrides", text)
      << "topic " << topic.name << ": config overrides now {" << text << "}";
  return Status::OK();
}

Status TopicRegistry::AlterTopicConfig(const std::string& name, const ConfigMap& configs,
                                       bool validate_only) {
  std::lock_guard<std::mutex> admin(admin_mu_);
  HR_RETURN_IF_ERROR(CheckOpenLocked());
  auto topic = FindTopic(name);
  if (!topic) return UnknownTopic(name);
  if (topic->internal) return RefuseInternal(*topic);
  HR_RETURN_IF_ERROR(ValidateTopicConfigs(configs));
  ConfigMap overrides;
  for (const auto& [k, v] : configs) overrides[k] = NormalizeTopicConfigValue(k, v);
  return CommitConfigLocked(*topic, std::move(overrides), validate_only);
}

Status TopicRegistry::IncrementalAlterTopicConfig(const std::string& name,
                                                  const std::vector<ConfigAlteration>& ops,
                                                  bool validate_only) {
  std::lock_guard<std::mutex> admin(admin_mu_);
  HR_RETURN_IF_ERROR(CheckOpenLocked());
  auto topic = FindTopic(name);
  if (!topic) return UnknownTopic(name);
  if (topic->internal) return RefuseInternal(*topic);
  HR_ASSIGN_OR_RETURN(ConfigMap overrides, ApplyConfigAlterations(*defaults(), topic->overrides, ops));
  return CommitConfigLocked(*topic, std::move(overrides), validate_only);
}

Result<std::vector<ConfigEntry>> TopicRegistry::DescribeTopicConfig(const std::string& name) const {
  auto topic = FindTopic(name);
  if (!topic) return UnknownTopic(name);
  return DescribeTopicConfigs(*defaults(), topic->overrides);
}

Result<std::shared_ptr<const Topic>> TopicRegistry::FindOrAutoCreate(const std::string& name) {
  if (auto t = FindTopic(name)) return t;
  HR_RETURN_IF_ERROR(ValidateTopicName(name));
  // Internal topics are the coordinators' logs, never ordinary topics.
  if (!config_.auto_create_topics_enable || IsInternalTopic(name)) return UnknownTopic(name);
  // Refused here, not by a job that would fail (and log) on every retry.
  HR_RETURN_IF_ERROR(CheckPartitionLimits(config_.num_partitions, -1));
  bool first;
  {
    std::lock_guard<std::mutex> lock(auto_mu_);
    first = auto_creating_.insert(name).second;
  }
  if (first) {
    if (post_admin_job_) {
      post_admin_job_([this, name] { AutoCreate(name); });
    } else {
      AutoCreate(name);
    }
  }
  if (auto t = FindTopic(name)) return t;  // created already (inline or quickly)
  return KafkaStatus(KafkaError::kLeaderNotAvailable, "Topic " + name + " is being created.");
}

void TopicRegistry::AutoCreate(const std::string& name) {
  CreateTopicRequest r;
  r.name = name;
  auto created = CreateTopic(r);
  if (!created.ok() && ToKafkaError(created.status()) != KafkaError::kTopicAlreadyExists) {
    HR_LOG(kWarn) << "auto-creating topic " << name << ": " << created.status().message();
  }
  std::lock_guard<std::mutex> lock(auto_mu_);
  auto_creating_.erase(name);
}

}  // namespace headrace::broker
