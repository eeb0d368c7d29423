// The topics and partitions this broker hosts (a single node's "replica
// manager"): loads them from the MetadataStore at start, creates, deletes
// and reconfigures them, and finds partitions for the request handlers.
//
// Errors are Status values built with KafkaStatus (kafka_error.h), so a
// handler answers with ToKafkaError(status) and status.message().
//
// Threading: every method is thread-safe. Admin operations (create, delete,
// add partitions, alter configs) are serialised by admin_mu_ and may do disk
// I/O. Lookups take map_mu_ shared for a hash lookup and a shared_ptr copy;
// admin operations take it exclusively only to swap a Topic snapshot in or
// out. A Topic snapshot never changes after publication: a change publishes
// a new one, so a handler may use the snapshot it holds without locks.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "broker/config/broker_config.h"
#include "broker/storage/dir_deleter.h"
#include "broker/storage/hw_checkpoint.h"
#include "broker/storage/log_dirs.h"
#include "broker/storage/metadata_store.h"
#include "broker/partition/partition.h"
#include "broker/config/topic_config.h"
#include "common/uuid.h"

namespace headrace::broker {

// A topic as published to lookups. Immutable.
struct Topic {
  std::string name;
  Uuid id;
  ConfigMap overrides;     // what the topic's configs override (persisted)
  TopicSettings settings;  // broker defaults + overrides
  // index = partition id. In cluster mode an entry is null where this
  // broker holds no replica of the partition; single node: never null.
  std::vector<std::shared_ptr<Partition>> partitions;
  // A coordinator's log served as an internal topic (SetInternalTopic):
  // never persisted, listed or changed by admin requests.
  bool internal = false;
  int32_t partition_count() const { return static_cast<int32_t>(partitions.size()); }
  int32_t hosted_count() const {
    int32_t n = 0;
    for (const auto& p : partitions) n += p ? 1 : 0;
    return n;
  }
};

struct CreateTopicRequest {
  std::string name;
  int32_t num_partitions = -1;      // -1: num.partitions
  int16_t replication_factor = -1;  // -1: default.replication.factor
  ConfigMap configs;
  bool validate_only = false;
  // Partitions the rest of this request may still create (the handler
  // starts at headrace.max.partitions.per.request); -1 = that whole limit.
  int32_t partition_budget = -1;
};

// What CreateTopics (v5+) reports back for a created (or validated) topic.
struct CreatedTopic {
  Uuid id;  // zero for validate_only
  int32_t num_partitions = 0;
  int16_t replication_factor = 0;
  std::vector<ConfigEntry> configs;
};

// What Open found on disk.
// Runs a job on the admin worker (BrokerState wires AdminWorker::Post).
using AdminJobPoster = std::function<void(std::function<void()>)>;

struct StartupReport {
  int topics = 0;
  int partitions = 0;
  int stray_dirs_removed = 0;          // partition dirs without metadata
  int deleted_dirs_resumed = 0;        // "-delete" dirs from before a crash
  int future_dirs_dropped = 0;         // unfinished moves, the original kept
  int future_dirs_promoted = 0;        // moves finished by the rename at start
  int offline_partitions = 0;          // in a directory that is offline
  std::vector<std::string> truncated;  // "<topic>-<p>: <reason>" per recovered tail
};

class LogDirMover;

class TopicRegistry {
 public:
  // Upper bound on partitions per topic (protects against absurd requests).
  static constexpr int32_t kMaxPartitionsPerTopic = 100000;

  struct Options {
    BrokerConfig config;
    MetadataStore* store = nullptr;         // required; must outlive the registry
    // The log directories (must outlive the registry); null = the registry
    // opens config's log.dirs itself, without locks (tests).
    LogDirs* dirs = nullptr;
    // What every partition is wired to (purgatory, flusher, commit policy,
    // local broker id); pointers may be null (tests).
    PartitionServices services;
    LogFactory log_factory = DefaultLogFactory();
    // Where auto-creation runs (FindOrAutoCreate); null = on the caller.
    AdminJobPoster post_admin_job;
    // Dynamic broker configs of topic defaults at start, by topic key:
    // {cluster-wide default, this broker} (dynamic_broker_config.h).
    std::pair<ConfigMap, ConfigMap> dynamic_topic_defaults;
  };

  // Validates the config, establishes the cluster identity (and each log
  // directory's, LogDirs::Bootstrap), finds every partition of every stored
  // topic in whichever directory holds it and opens (recovers) it. Stray
  // partition dirs and unfinished deletions are queued for removal; an
  // unfinished move (a "-future" dir) is dropped when the original exists
  // and finished (renamed into place) when it does not. A partition whose
  // directory is offline is published offline (KAFKA_STORAGE_ERROR).
  // Errors: a partition found in two directories (Corruption, naming both).
  static Result<std::unique_ptr<TopicRegistry>> Open(Options options);
  ~TopicRegistry();  // Close()

  // --- admin (CreateTopics, DeleteTopics, CreatePartitions, *AlterConfigs) ---
  // Errors: INVALID_TOPIC_EXCEPTION, TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS,
  // INVALID_REPLICATION_FACTOR, INVALID_CONFIG, KAFKA_STORAGE_ERROR,
  // POLICY_VIOLATION (over headrace.max.partitions or the request's
  // partition budget; the message names the limit).
  Result<CreatedTopic> CreateTopic(const CreateTopicRequest& request);
  // Removes the topic from the metadata, then renames its partition dirs to
  // "<topic>-<p>.<hex>-delete" and removes them in the background.
  // Errors: UNKNOWN_TOPIC_OR_PARTITION.
  Status DeleteTopic(const std::string& name);
  // Same by topic id; returns the name. Errors: UNKNOWN_TOPIC_ID.
  Result<std::string> DeleteTopicById(const Uuid& id);
  // Grows the topic to `new_total` partitions, at most `partition_budget`
  // more (-1: headrace.max.partitions.per.request).
  // Errors: UNKNOWN_TOPIC_OR_PARTITION, INVALID_PARTITIONS, POLICY_VIOLATION.
  Status CreatePartitions(const std::string& name, int32_t new_total, bool validate_only,
                          int32_t partition_budget = -1);
  // AlterConfigs: `configs` replaces all overrides (absent keys revert to
  // defaults). Errors: UNKNOWN_TOPIC_OR_PARTITION, INVALID_CONFIG.
  Status AlterTopicConfig(const std::string& name, const ConfigMap& configs, bool validate_only);
  // IncrementalAlterConfigs. Errors: as above plus INVALID_REQUEST.
  Status IncrementalAlterTopicConfig(const std::string& name,
                                     const std::vector<ConfigAlteration>& ops, bool validate_only);
  // DescribeConfigs for a topic. Errors: UNKNOWN_TOPIC_OR_PARTITION.
  Result<std::vector<ConfigEntry>> DescribeTopicConfig(const std::string& name) const;

  // --- lookups (hot path) ---
  std::shared_ptr<const Topic> FindTopic(std::string_view name) const;  // null if none
  std::shared_ptr<const Topic> FindTopicById(const Uuid& id) const;     // null if none
  std::shared_ptr<Partition> FindPartition(std::string_view topic, int32_t partition) const;
  // As FindPartition, with the UNKNOWN_TOPIC_OR_PARTITION status a handler sends.
  Result<std::shared_ptr<Partition>> GetPartition(std::string_view topic, int32_t partition) const;
  // Metadata/Produce auto-creation. The topic if it exists; otherwise, with
  // auto.create.topics.enable, its creation with the broker defaults is
  // posted to the admin worker (once per name while pending; never on the
  // caller's thread when Options::post_admin_job is set) and the answer is
  // LEADER_NOT_AVAILABLE (retriable, as Kafka answers while it creates a
  // topic; clients refresh their metadata and retry). Other errors:
  // UNKNOWN_TOPIC_OR_PARTITION (auto-create off), INVALID_TOPIC_EXCEPTION,
  // POLICY_VIOLATION (num.partitions more would exceed
  // headrace.max.partitions).
  Result<std::shared_ptr<const Topic>> FindOrAutoCreate(const std::string& name);
  std::vector<std::shared_ptr<const Topic>> ListTopics() const;  // sorted by name; no internal ones

  // Single node: a coordinator's log (`partition`, owned by its coordinator)
  // served as internal topic `name` (__consumer_offsets,
  // __transaction_state) with one partition: FindTopic, FindTopicById and
  // FindPartition find it (so Fetch, ListOffsets and OffsetForLeaderEpoch
  // read it as from Kafka), ListTopics and AllPartitions do not (retention
  // and Close leave it to its coordinator), and admin changes (alter
  // configs, delete, add partitions) are refused with
  // INVALID_TOPIC_EXCEPTION. `describe_as` are the configs DescribeConfigs
  // shows. The id is fixed per name. Null `partition` removes it.
  void SetInternalTopic(const std::string& name, std::shared_ptr<Partition> partition,
                        const ConfigMap& describe_as = {});
  std::vector<std::shared_ptr<const Topic>> InternalTopics() const;  // sorted by name
  std::vector<std::shared_ptr<Partition>> AllPartitions() const;

  // Dynamic broker configs changed: topics take the new defaults for every
  // key they do not override, at once (live partitions included).
  void SetDynamicTopicDefaults(const ConfigMap& cluster_default, const ConfigMap& per_broker);
  // What a topic inherits now (static + dynamic broker configs).
  std::shared_ptr<const TopicDefaults> defaults() const;

  const BrokerConfig& config() const { return config_; }
  const ClusterIdentity& identity() const { return identity_; }
  const StartupReport& startup_report() const { return startup_; }
  LogDirs& log_dirs() const { return *dirs_; }
  // Hosted partitions per log directory (index as in LogDirs).
  std::vector<int64_t> PartitionCountsPerDir() const;

  // --- AlterReplicaLogDirs (log_dir_mover.cc) ---
  // Starts moving the local replica of `topic`-`partition` to log directory
  // `dir` (an absolute path as DescribeLogDirs lists it) in the background:
  // a "-future" copy is made there and caught up while the partition keeps
  // serving, then swapped in (docs/durability.md). OK when the partition is
  // already there or a move to `dir` is under way.
  // In cluster mode the local replica moves whether this broker leads or
  // follows the partition (its role is kept across the swap).
  // Errors: LOG_DIR_NOT_FOUND (not one of log.dirs), KAFKA_STORAGE_ERROR
  // (the target directory or the partition is offline),
  // UNKNOWN_TOPIC_OR_PARTITION (single node: no such partition),
  // REPLICA_NOT_AVAILABLE (cluster mode: this broker hosts no replica of it).
  Status MoveReplica(const std::string& topic, int32_t partition, const std::string& dir);
  // Cluster mode: role changes and replica swaps exclude each other. The
  // broker holds this lock while it applies a cluster view to the replicas
  // and hands the followed set to its replica fetchers; LogDirMover while it
  // seals a moving replica, swaps in its copy and gives the copy the same
  // role. Lock order: before admin_mu_.
  std::mutex& roles_mutex() { return roles_mu_; }
  // Cluster mode: called by LogDirMover, under roles_mutex(), once `now`
  // (already in the replica's role) replaced `old`: the broker points its
  // replica fetchers at `now`. Set once before the broker serves.
  using ReplicaSwapHook =
      std::function<void(const Partition* old, const std::shared_ptr<Partition>& now)>;
  void SetReplicaSwapHook(ReplicaSwapHook hook) { replica_swap_hook_ = std::move(hook); }
  // Called by LogDirMover after a replica was moved and its copy published
  // (either mode), on the mover's thread with no registry lock held: the
  // broker moves the coordinators of an internal topic's partition to the
  // copy. Set once before the broker serves.
  using ReplicaMovedHook = std::function<void(const TopicPartition& tp)>;
  void SetReplicaMovedHook(ReplicaMovedHook hook) { replica_moved_hook_ = std::move(hook); }
  // A move in progress: the future replica's directory and log.
  struct FutureReplica {
    TopicPartition tp;
    int dir = -1;
    int64_t size_bytes = 0;
    int64_t offset_lag = 0;  // the current replica's LEO - the future's
  };
  std::vector<FutureReplica> FutureReplicas() const;
  // Blocks until no move is queued or running (tests).
  void DrainMoves();
  // Blocks until background directory removal is idle (tests).
  void DrainDeletions() { deleter_.Drain(); }

  // --- cluster mode (docs/cluster.md): the control plane decides ---
  // The local replica of `topic`'s partition `partition` (creating the topic
  // entry, growing its partition count, or taking its configs from `topic`
  // as needed, and opening the replica's log: a new replica starts as a
  // follower with no leader). A local topic with the same name and another
  // id (deleted and re-created meanwhile) is deleted first.
  Result<std::shared_ptr<Partition>> EnsureReplica(const std::string& name, const Uuid& id,
                                                   const ConfigMap& configs,
                                                   int32_t partition_count, int32_t partition);
  // Closes the local replica and removes its data (reassigned away).
  Status RemoveReplica(const std::string& name, int32_t partition);

  // Closes every partition (flushing it) and stops background deletion.
  // Later admin calls fail with Closed. Idempotent.
  Status Close();

 private:
  explicit TopicRegistry(Options options);
  Status Load();
  // Where each partition is found (topic, partition) -> directory index.
  using Locations = std::map<std::pair<std::string, int32_t>, int>;
  // Lists every online directory: queues "-delete" dirs and stray partition
  // dirs for removal, resolves "-future" dirs, and returns where the live
  // partitions are. Errors: a partition in two directories.
  Result<Locations> ScanDirs(const std::vector<TopicMetadata>& topics);
  // Opens partitions [from, to) of a topic: each in the directory
  // `found` says holds it, else (new) in the least-loaded online one. A
  // partition whose directory is or goes offline opens offline.
  Result<std::vector<std::shared_ptr<Partition>>> OpenPartitions(const std::string& name,
                                                                 const Uuid& id,
                                                                 const TopicSettings& settings,
                                                                 int32_t from, int32_t to,
                                                                 const Locations* found = nullptr);
  // Opens one partition in directory `dir`; an I/O error takes the
  // directory offline and returns IOError.
  Result<std::shared_ptr<Partition>> OpenIn(int dir, const TopicPartition& tp, const Uuid& id,
                                            const TopicSettings& settings);
  // Cluster mode: each directory's replication-offset-checkpoint as read
  // at start (empty when absent or unreadable: every HW then starts at 0).
  void LoadHwCheckpoints();
  // The stand-in for a partition whose directory is offline.
  std::shared_ptr<Partition> OfflinePartition(const TopicPartition& tp, const Uuid& id,
                                              const TopicSettings& settings, int dir);
  // Opens a partition for the first time (or again, where `found` says):
  // the directory it is in, or the least-loaded one, retrying on the next
  // when a directory fails while it is being created.
  Result<std::shared_ptr<Partition>> PlaceAndOpen(const TopicPartition& tp, const Uuid& id,
                                                  const TopicSettings& settings,
                                                  std::vector<int64_t>* counts,
                                                  const Locations* found);
  // LogDirs' offline handler: every partition of directory `dir` offline.
  void TakeDirOffline(int dir);
  // Cluster mode: opens the partitions of a stored topic whose directories
  // exist (the replicas this broker held), each as a follower with no
  // leader until the control plane says otherwise; null elsewhere.
  Result<std::vector<std::shared_ptr<Partition>>> OpenReplicas(const std::string& name,
                                                               const Uuid& id,
                                                               const TopicSettings& settings,
                                                               int32_t count,
                                                               const Locations& found);
  // Opens (found: where it is; else placed on the least-loaded directory)
  // a replica as a follower with no leader.
  Result<std::shared_ptr<Partition>> OpenReplica(const TopicPartition& tp, const Uuid& id,
                                                 const TopicSettings& settings,
                                                 const Locations* found);
  // Renames a partition dir aside and queues it for removal (if it exists).
  void RetireDir(const TopicPartition& tp);
  // Validates partitions / replication factor / configs of a create request.
  Status ValidateCreate(const CreateTopicRequest& r, int32_t* partitions, int16_t* rf,
                        TopicSettings* settings) const;
  // Persists new overrides and publishes a snapshot. REQUIRES: admin_mu_.
  Status CommitConfigLocked(const Topic& topic, ConfigMap overrides, bool validate_only);
  void Publish(std::shared_ptr<const Topic> topic);  // takes map_mu_ exclusively
  // POLICY_VIOLATION when adding `adding` partitions exceeds `budget` (-1:
  // headrace.max.partitions.per.request) or headrace.max.partitions.
  // Exact under admin_mu_ (no creation can run meanwhile); without it, a
  // pre-check that a concurrent creation may overtake.
  Status CheckPartitionLimits(int64_t adding, int32_t budget) const;
  int64_t HostedPartitions() const;  // sums the topics under map_mu_
  void AutoCreate(const std::string& name);  // the admin job of FindOrAutoCreate
  Status CheckOpenLocked() const;                    // REQUIRES: admin_mu_

  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };

  const BrokerConfig config_;
  mutable std::mutex defaults_mu_;  // guards defaults_ (the pointer)
  std::shared_ptr<const TopicDefaults> defaults_;
  MetadataStore* const store_;
  std::unique_ptr<LogDirs> owned_dirs_;  // when Options::dirs is null
  LogDirs* dirs_ = nullptr;
  const PartitionServices services_;
  const LogFactory log_factory_;
  ClusterIdentity identity_;
  StartupReport startup_;
  // Cluster mode: the checkpointed HWs by directory index (LoadHwCheckpoints),
  // applied by OpenIn; written by nothing after start.
  std::vector<HwCheckpoint> hw_checkpoints_;

  std::mutex roles_mu_;  // roles_mutex()
  ReplicaSwapHook replica_swap_hook_;
  ReplicaMovedHook replica_moved_hook_;
  mutable std::mutex admin_mu_;  // serialises admin operations and Close; guards closed_
  bool closed_ = false;
  mutable std::shared_mutex map_mu_;  // guards by_name_ and by_id_
  std::unordered_map<std::string, std::shared_ptr<const Topic>, StringHash, std::equal_to<>>
      by_name_;
  std::unordered_map<Uuid, std::shared_ptr<const Topic>, UuidHash> by_id_;
  std::map<std::string, std::shared_ptr<const Topic>, std::less<>> internal_;  // guarded by map_mu_
  DirDeleter deleter_;
  const AdminJobPoster post_admin_job_;
  std::mutex auto_mu_;  // guards auto_creating_
  std::set<std::string> auto_creating_;  // names whose auto-creation is posted
  std::unique_ptr<LogDirMover> mover_;  // AlterReplicaLogDirs
  friend class LogDirMover;
};

}  // namespace headrace::broker
