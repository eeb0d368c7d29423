// TopicRegistry: start-up, lookups and shutdown. The admin operations are in
// topic_admin.cc.
#include "broker/topics/topic_registry.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "broker/base/kafka_error.h"
#include "broker/topics/log_dir_mover.h"
#include "broker/storage/offline_log.h"
#include "broker/partition/partition_dir.h"
#include "common/logging.h"

namespace headrace::broker {

namespace fs = std::filesystem;

TopicRegistry::TopicRegistry(Options options)
    : config_(std::move(options.config)),
      defaults_(std::make_shared<const TopicDefaults>(WithDynamicLayers(
          config_.topic_defaults(), options.dynamic_topic_defaults.first,
          options.dynamic_topic_defaults.second))),
      store_(options.store),
      dirs_(options.dirs),
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
  if (!r->dirs_) {
    LogDirs::Options d;
    d.paths = ConfiguredLogDirs(r->config_);
    d.env = r->services_.file_env;
    d.lock = false;
    HR_ASSIGN_OR_RETURN(r->owned_dirs_, LogDirs::Open(std::move(d)));
    r->dirs_ = r->owned_dirs_.get();
  }
  TopicRegistry* self = r.get();
  r->dirs_->SetOfflineHandler([self](int dir, const Status&) { self->TakeDirOffline(dir); });
  r->mover_ = std::make_unique<LogDirMover>(self);
  HR_RETURN_IF_ERROR(r->Load());
  return r;
}

Status TopicRegistry::Load() {
  HR_ASSIGN_OR_RETURN(identity_, store_->Bootstrap({config_.cluster_id, config_.node_id}));
  HR_RETURN_IF_ERROR(dirs_->Bootstrap(identity_));
  HR_ASSIGN_OR_RETURN(std::vector<TopicMetadata> topics, store_->LoadTopics());
  HR_ASSIGN_OR_RETURN(Locations found, ScanDirs(topics));
  if (config_.cluster_mode()) LoadHwCheckpoints();
  for (const TopicMetadata& t : topics) {
    auto settings = ApplyTopicConfigs(*defaults(), t.configs);
    if (!settings.ok()) {
      return Status::Corruption("stored configs of topic " + t.name + ": " +
                                settings.status().message());
    }
    std::vector<std::shared_ptr<Partition>> parts;
    if (config_.cluster_mode()) {
      HR_ASSIGN_OR_RETURN(parts, OpenReplicas(t.name, t.id, settings.value(), t.partition_count,
                                              found));
    } else {
      HR_ASSIGN_OR_RETURN(parts, OpenPartitions(t.name, t.id, settings.value(), 0,
                                                t.partition_count, &found));
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
  // A directory that failed while this start opened partitions in it: those
  // opened before the failure go offline too.
  for (const auto& p : AllPartitions()) {
    const int d = dirs_->IndexOf(p->dir());
    if (d >= 0 && !dirs_->online(d)) p->TakeOffline();
    if (p->offline()) ++startup_.offline_partitions;
  }
  if (startup_.offline_partitions > 0) {
    HR_LOG(kWarn) << startup_.offline_partitions
                  << " partition(s) are offline: their log directory is offline";
  }
  return Status::OK();
}

Result<TopicRegistry::Locations> TopicRegistry::ScanDirs(const std::vector<TopicMetadata>& topics) {
  std::map<std::string, int32_t> counts;
  for (const auto& t : topics) counts[t.name] = t.partition_count;
  FileEnv& env = dirs_->env();
  Locations found;
  std::vector<std::pair<TopicPartition, int>> futures;  // (partition, dir)
  std::vector<std::pair<TopicPartition, std::string>> futures_names;
  for (int d = 0; d < dirs_->size(); ++d) {
    if (!dirs_->online(d)) continue;
    auto names = env.ListDir(dirs_->path(d));
    if (!names.ok()) {
      if (d == 0) return names.status();
      dirs_->MarkOffline(d, names.status());
      continue;
    }
    for (const std::string& name : names.value()) {
      const std::string path = dirs_->path(d) + "/" + name;
      if (IsDeletedPartitionDirName(name)) {
        deleter_.Enqueue(path);
        ++startup_.deleted_dirs_resumed;
        continue;
      }
      if (auto tp = ParseFuturePartitionDirName(name)) {
        futures.emplace_back(*tp, d);
        futures_names.emplace_back(*tp, name);
        continue;
      }
      auto tp = ParsePartitionDirName(name);
      if (!tp) continue;
      auto st = env.StatPath(path + "/.");  // a directory (not a file named like one)?
      if (!st.ok()) continue;
      auto it = counts.find(tp->topic);
      if (it == counts.end() || tp->partition >= it->second) {
        HR_LOG(kWarn) << "removing partition directory without metadata: " << path;
        std::string dead = dirs_->path(d) + "/" + DeletedPartitionDirName(*tp, Uuid::Random().ToHex());
        deleter_.Enqueue(env.Rename(path, dead).ok() ? dead : path);
        ++startup_.stray_dirs_removed;
        continue;
      }
      auto [where, fresh] = found.emplace(std::make_pair(tp->topic, tp->partition), d);
      if (!fresh) {
        return Status::Corruption(
            "partition " + tp->ToString() + " is in two log directories: " +
            dirs_->path(where->second) + " and " + dirs_->path(d) +
            "; remove the stale copy (headrace never leaves two after a move)");
      }
    }
  }
  // Moves cut short by a stop (docs/durability.md, "Moving a partition").
  for (size_t i = 0; i < futures.size(); ++i) {
    const auto& [tp, d] = futures[i];
    const std::string path = dirs_->path(d) + "/" + futures_names[i].second;
    if (found.count({tp.topic, tp.partition})) {
      // The original is still in place: the copy may be partial; drop it.
      deleter_.Enqueue(path);
      ++startup_.future_dirs_dropped;
    } else if (dirs_->any_offline()) {
      // The original may be on the offline directory: decide nothing.
      HR_LOG(kWarn) << "leaving " << path << " alone: a log directory is offline, so "
                    << "whether its original still exists is unknown";
    } else {
      // The original was retired, which happens only once the copy is
      // complete: finish the move.
      const std::string live = PartitionDirPath(dirs_->path(d), tp);
      Status st = env.Rename(path, live);
      if (st.ok()) st = env.SyncDir(dirs_->path(d));
      if (!st.ok()) {
        if (d == 0) return st;
        dirs_->MarkOffline(d, st);
        continue;
      }
      HR_LOG(kInfo) << "finished the move of " << tp.ToString() << " to " << dirs_->path(d);
      found[{tp.topic, tp.partition}] = d;
      ++startup_.future_dirs_promoted;
    }
  }
  return found;
}

Result<std::vector<std::shared_ptr<Partition>>> TopicRegistry::OpenPartitions(
    const std::string& name, const Uuid& id, const TopicSettings& settings, int32_t from,
    int32_t to, const Locations* found) {
  std::vector<std::shared_ptr<Partition>> out;
  std::vector<int64_t> counts = PartitionCountsPerDir();
  for (int32_t p = from; p < to; ++p) {
    TopicPartition tp{name, p};
    auto part = PlaceAndOpen(tp, id, settings, &counts, found);
    if (!part.ok()) {
      for (auto& opened : out) (void)opened->Close();
      return KafkaStatus(KafkaError::kKafkaStorageError,
                         "open " + tp.ToString() + ": " + part.status().ToString());
    }
    out.push_back(std::move(part).value());
  }
  return out;
}

Result<std::shared_ptr<Partition>> TopicRegistry::PlaceAndOpen(const TopicPartition& tp,
                                                               const Uuid& id,
                                                               const TopicSettings& settings,
                                                               std::vector<int64_t>* counts,
                                                               const Locations* found) {
  if (found) {
    auto it = found->find({tp.topic, tp.partition});
    if (it != found->end()) {
      if (!dirs_->online(it->second)) return OfflinePartition(tp, id, settings, it->second);
      auto part = OpenIn(it->second, tp, id, settings);
      // An I/O error took the directory offline (several directories): the
      // partition is served offline. With one directory it fails the start,
      // as before.
      if (part.ok() || dirs_->online(it->second)) return part;
      return OfflinePartition(tp, id, settings, it->second);
    }
    // Not found: it may be on a directory that is offline.
    if (dirs_->any_offline()) return OfflinePartition(tp, id, settings, -1);
  }
  for (;;) {
    int d = dirs_->PickForNewPartition(*counts);
    if (d < 0) {
      return KafkaStatus(KafkaError::kKafkaStorageError, "every log directory is offline");
    }
    auto part = OpenIn(d, tp, id, settings);
    if (part.ok()) {
      if (d < static_cast<int>(counts->size())) ++(*counts)[d];
      return part;
    }
    // An I/O error took directory d offline (several directories): try the
    // next one; with a single directory it is the answer.
    if (part.status().code() != StatusCode::kIOError || dirs_->online(d)) return part.status();
  }
}

Result<std::shared_ptr<Partition>> TopicRegistry::OpenIn(int dir, const TopicPartition& tp,
                                                         const Uuid& id,
                                                         const TopicSettings& settings) {
  auto part = Partition::Open(dirs_->path(dir), tp, id, settings, services_, log_factory_);
  if (!part.ok() && part.status().code() == StatusCode::kIOError) {
    dirs_->MarkOffline(dir, part.status());
  }
  if (part.ok() && config_.cluster_mode()) {
    // Kafka's rule: min(checkpointed HW, LEO), 0 without a checkpoint (a
    // new partition has LEO 0 anyway).
    Offset hw(0);
    if (dir < static_cast<int>(hw_checkpoints_.size())) {
      auto it = hw_checkpoints_[dir].find({tp.topic, tp.partition});
      if (it != hw_checkpoints_[dir].end()) hw = it->second;
    }
    (*part)->StartHighWatermarkAt(hw);
  }
  return part;
}

void TopicRegistry::LoadHwCheckpoints() {
  hw_checkpoints_.assign(dirs_->size(), HwCheckpoint{});
  for (int d = 0; d < dirs_->size(); ++d) {
    if (!dirs_->online(d)) continue;
    Result<HwCheckpoint> cp = ReadHwCheckpoint(dirs_->env(), dirs_->path(d));
    if (cp.ok()) {
      hw_checkpoints_[d] = std::move(*cp);
    } else {
      // Safe direction: every HW of the directory starts at 0 and comes
      // back from the leaders / the ISR.
      HR_LOG(kWarn) << "high-watermark checkpoint ignored: " << cp.status().ToString();
    }
  }
}

std::shared_ptr<Partition> TopicRegistry::OfflinePartition(const TopicPartition& tp,
                                                           const Uuid& id,
                                                           const TopicSettings& settings,
                                                           int dir) {
  std::string where = dir >= 0 ? PartitionDirPath(dirs_->path(dir), tp) : "";
  Status cause = Status::IOError("the log directory of " + tp.ToString() + " is offline");
  auto p = std::make_shared<Partition>(tp, id, MakeOfflineLog(where, cause), settings, services_);
  p->TakeOffline();
  return p;
}

std::vector<int64_t> TopicRegistry::PartitionCountsPerDir() const {
  std::vector<int64_t> counts(dirs_->size(), 0);
  for (const auto& p : AllPartitions()) {
    int d = dirs_->IndexOf(p->dir());
    if (d >= 0) ++counts[d];
  }
  for (const auto& f : FutureReplicas()) {
    if (f.dir >= 0) ++counts[f.dir];  // Kafka counts future logs too
  }
  return counts;
}

void TopicRegistry::TakeDirOffline(int dir) {
  int n = 0;
  for (const auto& p : AllPartitions()) {
    if (dirs_->IndexOf(p->dir()) != dir) continue;
    p->TakeOffline();
    ++n;
  }
  HR_LOG(kError) << n << " partition(s) of log directory " << dirs_->path(dir)
                 << " are offline";
}

void TopicRegistry::RetireDir(const TopicPartition& tp) {
  FileEnv& env = dirs_->env();
  for (int d = 0; d < dirs_->size(); ++d) {
    if (!dirs_->online(d)) continue;  // nothing is written to a failed directory
    std::string live = PartitionDirPath(dirs_->path(d), tp);
    if (!env.StatPath(live).ok()) continue;
    std::string dead = dirs_->path(d) + "/" + DeletedPartitionDirName(tp, Uuid::Random().ToHex());
    deleter_.Enqueue(env.Rename(live, dead).ok() ? dead : live);
  }
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
  if (mover_) mover_->Stop();  // before admin_mu_, which a move's swap takes
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
