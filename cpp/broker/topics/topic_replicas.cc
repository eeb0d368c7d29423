// TopicRegistry in cluster mode: the replicas the control plane assigns to
// this broker (docs/cluster.md). Topics exist cluster-wide in ZooKeeper;
// the registry keeps the local replicas and the metadata file records the
// topics they belong to, so a restart reopens them.
#include <filesystem>

#include "broker/base/kafka_error.h"
#include "broker/partition/partition_dir.h"
#include "broker/topics/topic_registry.h"
#include "common/logging.h"

namespace headrace::broker {

namespace fs = std::filesystem;

Result<std::shared_ptr<Partition>> TopicRegistry::OpenReplica(const TopicPartition& tp,
                                                              const Uuid& id,
                                                              const TopicSettings& settings,
                                                              const Locations* found) {
  std::vector<int64_t> counts = PartitionCountsPerDir();
  auto part = PlaceAndOpen(tp, id, settings, &counts, found);
  if (!part.ok()) {
    return KafkaStatus(KafkaError::kKafkaStorageError,
                       "open " + tp.ToString() + ": " + part.status().ToString());
  }
  std::shared_ptr<Partition> p = std::move(part).value();
  if (p->offline()) return p;  // its directory is offline: served as such
  // No leader until the control plane names one: nothing is appended or
  // served as leader from what this broker believed before it stopped.
  HR_RETURN_IF_ERROR(p->BecomeFollower(p->leader_epoch(), -1, {config_.node_id}));
  return p;
}

Result<std::vector<std::shared_ptr<Partition>>> TopicRegistry::OpenReplicas(
    const std::string& name, const Uuid& id, const TopicSettings& settings, int32_t count,
    const Locations& found) {
  std::vector<std::shared_ptr<Partition>> out(count);
  for (int32_t i = 0; i < count; ++i) {
    TopicPartition tp{name, i};
    if (!found.count({name, i})) continue;  // no replica here (or on an offline directory)
    auto p = OpenReplica(tp, id, settings, &found);
    if (!p.ok()) {
      for (auto& opened : out) {
        if (opened) (void)opened->Close();
      }
      return p.status();
    }
    out[i] = std::move(p).value();
  }
  return out;
}

Result<std::shared_ptr<Partition>> TopicRegistry::EnsureReplica(const std::string& name,
                                                                const Uuid& id,
                                                                const ConfigMap& configs,
                                                                int32_t partition_count,
                                                                int32_t partition) {
  if (partition < 0 || partition >= partition_count) {
    return KafkaStatus(KafkaError::kInvalidPartitions,
                       name + ": partition " + std::to_string(partition) + " out of range");
  }
  std::shared_ptr<const Topic> topic = FindTopic(name);
  if (topic && topic->id != id) {  // deleted and re-created under the same name
    HR_LOG(kInfo) << "topic " << name << " was re-created (id " << id.ToBase64()
                  << "); removing the local replicas of id " << topic->id.ToBase64();
    HR_RETURN_IF_ERROR(DeleteTopic(name));
    topic = nullptr;
  }
  if (topic && partition < topic->partition_count() && topic->partitions[partition] &&
      topic->overrides == configs) {
    return topic->partitions[partition];  // the common case: nothing to do
  }
  std::lock_guard<std::mutex> admin(admin_mu_);
  HR_RETURN_IF_ERROR(CheckOpenLocked());
  topic = FindTopic(name);
  HR_ASSIGN_OR_RETURN(TopicSettings settings, ApplyTopicConfigs(*defaults(), configs));
  auto next = topic ? std::make_shared<Topic>(*topic) : std::make_shared<Topic>();
  next->name = name;
  next->id = id;
  const bool configs_changed = !topic || topic->overrides != configs;
  next->overrides = configs;
  next->settings = settings;
  if (next->partition_count() < partition_count) next->partitions.resize(partition_count);
  if (!topic || configs_changed || topic->partition_count() < partition_count) {
    Status stored = store_->PutTopic({name, id, next->partition_count(), configs});
    if (!stored.ok()) {
      return KafkaStatus(KafkaError::kKafkaStorageError, "metadata: " + stored.ToString());
    }
  }
  if (configs_changed) {
    for (const auto& p : next->partitions) {
      if (p) p->SetSettings(settings);
    }
  }
  if (!next->partitions[partition]) {
    HR_RETURN_IF_ERROR(CheckPartitionLimits(1, -1));
    HR_ASSIGN_OR_RETURN(next->partitions[partition],
                        OpenReplica({name, partition}, id, settings, nullptr));
  }
  std::shared_ptr<Partition> out = next->partitions[partition];
  Publish(std::move(next));
  return out;
}

Status TopicRegistry::RemoveReplica(const std::string& name, int32_t partition) {
  std::lock_guard<std::mutex> admin(admin_mu_);
  HR_RETURN_IF_ERROR(CheckOpenLocked());
  std::shared_ptr<const Topic> topic = FindTopic(name);
  if (!topic || partition < 0 || partition >= topic->partition_count() ||
      !topic->partitions[partition]) {
    return Status::OK();
  }
  auto next = std::make_shared<Topic>(*topic);
  std::shared_ptr<Partition> gone = std::move(next->partitions[partition]);
  Publish(std::move(next));
  (void)gone->Abandon();
  RetireDir({name, partition});
  HR_LOG(kInfo) << "removed the local replica of " << name << "-" << partition
                << " (no longer assigned to this broker)";
  return Status::OK();
}

}  // namespace headrace::broker
