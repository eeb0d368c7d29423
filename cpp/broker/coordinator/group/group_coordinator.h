// The group coordinator (Kafka's classic group protocol) of a single-node
// broker: this node coordinates every group. It owns the groups' state
// (group.h), their durable log (group_log.h) and a timer thread that expires
// sessions, completes rebalances at their deadline and applies
// offsets.retention.minutes.
//
// Threading: every public method may be called from any thread. One mutex
// guards all groups and the log (group traffic is light; an OffsetCommit
// holds it for one append + fsync). Join/Sync callbacks run with no lock held,
// on the calling thread or the timer thread, exactly once each (Stop answers
// parked ones with COORDINATOR_NOT_AVAILABLE).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "broker/coordinator/group/group.h"
#include "broker/coordinator/group/group_config.h"
#include "broker/coordinator/group/group_resource_config.h"
#include "broker/coordinator/base/group_log.h"
#include "broker/coordinator/group/group_records.h"

namespace headrace::broker::group {

struct JoinRequest {
  std::string group_id;
  std::string member_id;  // "" = new member
  std::optional<std::string> instance_id;
  std::string client_id;
  std::string client_host;
  int32_t session_timeout_ms = 0;
  int32_t rebalance_timeout_ms = 0;
  std::string protocol_type;
  std::vector<Protocol> protocols;
  // JoinGroup v4+ (KIP-394): a new dynamic member first gets
  // MEMBER_ID_REQUIRED with its id and must join again with it.
  bool require_known_member_id = true;
};

struct SyncRequest {
  std::string group_id;
  std::string member_id;
  std::optional<std::string> instance_id;
  int32_t generation = -1;
  std::optional<std::string> protocol_type;  // v5+: checked when set
  std::optional<std::string> protocol_name;
  std::vector<std::pair<std::string, std::string>> assignments;  // leader only
};

struct LeaveMember {
  std::string member_id;  // may be "" when instance_id is set (v3+)
  std::optional<std::string> instance_id;
};

struct CommitPartition {
  std::string topic;
  int32_t partition = 0;
  int64_t offset = 0;
  int32_t leader_epoch = -1;
  std::optional<std::string> metadata;
};

struct CommitRequest {
  std::string group_id;
  std::string member_id;
  std::optional<std::string> instance_id;
  int32_t generation = -1;  // the member epoch for a consumer-protocol group (v9)
  std::vector<CommitPartition> partitions;
  int16_t api_version = 9;  // OffsetCommit version: < 9 by a KIP-848 member = UNSUPPORTED_VERSION
};

// TxnOffsetCommit (API 28): offsets a transactional producer commits for a
// group; pending (invisible to OffsetFetch) until the transaction's marker.
struct TxnCommitRequest {
  std::string transactional_id;
  std::string group_id;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  std::string member_id;  // v3+ (KIP-447); "" = not checked
  std::optional<std::string> instance_id;
  int32_t generation = -1;  // -1 = not checked
  std::vector<CommitPartition> partitions;
};

struct FetchedOffset {
  std::string topic;
  int32_t partition = 0;
  CommittedOffset committed;  // offset -1 when none is committed
  // UNSTABLE_OFFSET_COMMIT (offset -1) for a partition with pending
  // transactional offsets when asked with require_stable; else NONE.
  KafkaError error = KafkaError::kNone;
};

struct GroupListing {
  std::string group_id;
  std::string protocol_type;
  std::string state;  // as Group::StateName
  std::string type;   // "classic", "consumer" or "share"
};

// KIP-848 (ConsumerGroupHeartbeat, consumer_group_coordinator.cc).
// What the coordinator needs of a topic to assign it.
struct TopicInfo {
  Uuid id;
  int32_t partitions = 0;
};
// The topic named so, or nullopt when it does not exist.
using TopicLookup = std::function<std::optional<TopicInfo>(const std::string& name)>;
// Every topic name (for regex subscriptions).
using TopicNames = std::function<std::vector<std::string>()>;
using IdPartitions = std::vector<std::pair<Uuid, std::vector<int32_t>>>;

struct ConsumerHeartbeatRequest {
  std::string group_id;
  std::string member_id;
  int32_t member_epoch = 0;  // 0 join, -1 leave, -2 static member leaves for now
  std::optional<std::string> instance_id;
  std::optional<std::string> rack_id;
  int32_t rebalance_timeout_ms = -1;  // -1 = unchanged
  std::optional<std::vector<std::string>> subscribed_topic_names;  // nullopt = unchanged
  std::optional<std::string> subscribed_topic_regex;  // v1; nullopt = unchanged, "" = none
  std::optional<std::string> server_assignor;
  std::optional<IdPartitions> owned;  // nullopt = unchanged since the last heartbeat
  std::string client_id;
  std::string client_host;
};

struct ConsumerHeartbeatResult {
  KafkaError error = KafkaError::kNone;
  std::optional<std::string> error_message;
  std::string member_id;
  int32_t member_epoch = 0;
  int32_t heartbeat_interval_ms = 0;
  std::optional<IdPartitions> assignment;  // set when the member must (re)read it
};

struct ConsumerGroupDescription {
  KafkaError error = KafkaError::kNone;
  std::optional<std::string> error_message;
  std::string group_id;
  std::string state;
  int32_t group_epoch = 0;
  int32_t assignment_epoch = 0;
  std::string assignor;
  struct Member {
    ConsumerMember member;
    TopicPartitions target;
  };
  std::vector<Member> members;
  std::map<std::string, Uuid> topic_ids;  // of the partitions named above
};

// ShareGroupDescribe: the group as it is (a copy), or an error.
struct ShareGroupDescription {
  KafkaError error = KafkaError::kNone;
  std::optional<std::string> error_message;
  std::optional<ShareGroup> group;
};

struct DescribedMember {
  std::string member_id;
  std::optional<std::string> instance_id;
  std::string client_id;
  std::string client_host;
  std::string metadata;    // Stable groups only
  std::string assignment;  // Stable groups only
};

struct GroupDescription {
  KafkaError error = KafkaError::kNone;
  std::string group_id;
  GroupState state = GroupState::kDead;  // Dead for an unknown group
  std::string protocol_type;
  std::string protocol;  // Stable groups only
  std::vector<DescribedMember> members;
};

class GroupCoordinator {
 public:
  // Callbacks collected under the mutex and run after unlocking.
  using Done = std::vector<std::function<void()>>;

  struct Options {
    GroupConfig config;
    std::string data_dir;          // the log lives in data_dir/__group_metadata
    FileEnv* env = nullptr;        // the log's I/O seam (null = the OS); outlives the coordinator
    bool start_timer = true;       // false: tests call Tick() themselves
    std::function<int64_t()> now_ms;  // default: the system clock
    // The group log's partition wiring (purgatory, flusher); its
    // commit_requires_fsync is taken from config.commit_fsync.
    PartitionServices log_services;
    // Cluster mode: the coordinator's log is this partition (the local
    // leader replica of __consumer_offsets-0) instead of its own
    // data_dir/__group_metadata.
    std::shared_ptr<Partition> log_partition;
    // Called (outside the coordinator's mutex) when a share group's member
    // leaves (epoch -1; `expired` false) or its session expires (true): the
    // broker releases the records it acquired here (api ShareFetch,
    // broker/share). May be empty.
    std::function<void(const std::string& group, const std::string& member, bool expired)>
        share_member_gone;
    // The group configs of a group id (GROUP config resource,
    // group_resource_config.h): their session timeouts and heartbeat
    // intervals override config's for that group's KIP-848 and share
    // members from their next heartbeat. May be empty (none). Called under
    // the coordinator's mutex: it must not call back into the coordinator.
    std::function<std::map<std::string, std::string>(const std::string& group)> group_configs;
  };

  // Opens the log, replays it (groups with members come back Stable and must
  // heartbeat within their session timeout) and starts the timer thread.
  static Result<std::unique_ptr<GroupCoordinator>> Open(Options options);
  ~GroupCoordinator();  // Stop()

  // The group log's partition: a request whose records must be durable
  // before it is answered (OffsetCommit, OffsetDelete, DeleteGroups) waits
  // for its high watermark to reach the log end read after the call.
  const std::shared_ptr<Partition>& log_partition() const { return log_partition_; }

  void Join(JoinRequest req, JoinCallback done);
  void Sync(SyncRequest req, SyncCallback done);
  KafkaError Heartbeat(const std::string& group_id, const std::string& member_id,
                       const std::optional<std::string>& instance_id, int32_t generation);
  // Returns the group-level error and, when that is NONE, one error per member.
  std::pair<KafkaError, std::vector<KafkaError>> Leave(const std::string& group_id,
                                                       const std::vector<LeaveMember>& members);

  // One error per partition, in order. The caller has already answered
  // partitions of unknown topics (UNKNOWN_TOPIC_OR_PARTITION) and left them out.
  std::vector<KafkaError> Commit(const CommitRequest& req);
  // TxnOffsetCommit: records the offsets as pending for the producer (one
  // error per partition, in order); they become committed offsets when
  // CompleteTxn(producer_id, commit=true) runs, and are dropped on abort.
  // Validated as Commit (group id; member and generation when the request
  // names them, KIP-447), except that an unknown group is created, a group
  // with members accepts a request naming none (v0-2), and a rebalance in
  // progress does not refuse it. An epoch older than the one the producer's
  // pending offsets in this group carry, or than the epoch of the last marker
  // that ended one of its transactions here (a fenced producer's request that
  // arrives after the abort; accepted, it would stay pending forever), is
  // INVALID_PRODUCER_EPOCH. The
  // records are appended like Commit's: the caller answers once the log's HW
  // passes its end (api/group_log_wait.h). group_txn_offsets.cc.
  std::vector<KafkaError> CommitTxnOffsets(const TxnCommitRequest& req);
  // A transaction marker for `producer_id` reached the group coordinator
  // (WriteTxnMarkers on __consumer_offsets): materialises (commit) or drops
  // (abort) its pending offsets in every group, and fences the producer's
  // epochs below `producer_epoch` (the marker's; a fencing abort carries the
  // bumped one), with one appended record (kind 4, group_records.h); durable
  // once the log's HW passes the log end read after the call. OK, appending
  // nothing, when it has no pending offsets and the epoch is not newer, so a
  // retried marker is harmless. A committed offset recorded after the
  // transaction's offset for the same partition is kept (as Kafka).
  // Errors: Closed once stopped; the log's append error.
  Status CompleteTxn(int64_t producer_id, int16_t producer_epoch, bool commit);
  // Whether a group has pending transactional offsets (OffsetFetch with
  // require_stable answers UNSTABLE_OFFSET_COMMIT, KIP-447).
  bool HasPendingTxnOffsets(const std::string& group_id);
  // `topics` nullopt = every committed offset of the group. Unknown groups
  // and partitions without a commit answer offset -1. `require_stable`
  // (OffsetFetch v7+): partitions with pending transactional offsets answer
  // FetchedOffset::error UNSTABLE_OFFSET_COMMIT.
  // OffsetFetch v9 names the member (`member_id`, `member_epoch`): for a
  // consumer-protocol group an unknown member is UNKNOWN_MEMBER_ID and
  // another epoch STALE_MEMBER_EPOCH (no member id and epoch < 0: anyone);
  // classic groups ignore them.
  KafkaError FetchOffsets(const std::string& group_id,
                          const std::optional<std::vector<TopicPartitionKey>>& partitions,
                          std::vector<FetchedOffset>* out, bool require_stable = false,
                          const std::optional<std::string>& member_id = std::nullopt,
                          int32_t member_epoch = -1);
  // OffsetDelete: group error, or NONE and one error per partition.
  KafkaError DeleteOffsets(const std::string& group_id,
                           const std::vector<TopicPartitionKey>& partitions,
                           std::vector<KafkaError>* per_partition);

  // `states` empty = all; matched case-insensitively against GroupStateName.
  std::vector<GroupListing> ListGroups(const std::vector<std::string>& states);
  GroupDescription Describe(const std::string& group_id);
  // DeleteGroups: GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, INVALID_GROUP_ID or NONE.
  KafkaError DeleteGroup(const std::string& group_id);

  // KIP-848 ConsumerGroupHeartbeat (consumer_group_coordinator.cc): joins,
  // heartbeats, leaves; recomputes the target assignment when the group
  // epoch moved and reconciles the member towards it. `topics` resolves the
  // subscribed topics (their ids and partition counts).
  ConsumerHeartbeatResult ConsumerHeartbeat(const ConsumerHeartbeatRequest& req,
                                            const TopicLookup& topics,
                                            const TopicNames& all_topics = {});
  // ConsumerGroupDescribe: GROUP_ID_NOT_FOUND for an unknown group or one
  // of the classic protocol.
  ConsumerGroupDescription DescribeConsumerGroup(const std::string& group_id);

  // KIP-932 ShareGroupHeartbeat (share_group_coordinator.cc): joins,
  // heartbeats and leaves of a share group's members (ShareGroup::Heartbeat
  // under the mutex); an unknown group is created by a join. `topics`: every
  // topic that exists now with its partition count. Errors besides
  // ShareGroup's: INVALID_REQUEST (no group id), GROUP_ID_NOT_FOUND (a group
  // of another type), COORDINATOR_NOT_AVAILABLE (stopped).
  ShareHeartbeatResult ShareHeartbeat(const std::string& group_id, const ShareHeartbeat& hb,
                                      const TopicSizes& topics);
  // ShareGroupDescribe: GROUP_ID_NOT_FOUND for an unknown group or one of
  // another type.
  ShareGroupDescription DescribeShareGroup(const std::string& group_id);
  // Whether `member_id` of share group `group_id` is assigned the partition
  // (the ShareFetch handler serves a member only those).
  bool ShareAssigned(const std::string& group_id, const std::string& member_id,
                     const std::string& topic, int32_t partition);

  // Runs the deadline checks once (the timer thread calls this).
  void Tick();
  // Answers parked requests with COORDINATOR_NOT_AVAILABLE, stops the timer
  // and closes the log. Idempotent; later calls answer
  // COORDINATOR_NOT_AVAILABLE.
  void Stop();

  const GroupConfig& config() const { return config_; }

 private:
  explicit GroupCoordinator(Options options);
  Status Load();
  void ApplyLogEntry(const GroupLog::Entry& e);
  // Replay of kinds 3 and 4 (group_txn_offsets.cc).
  void ApplyTxnLogEntry(const RecordKey& key, const std::optional<std::string>& value);
  void TimerLoop();
  GroupDescription DescribeLocked(const std::string& group_id, Done& done);
  KafkaError DeleteGroupLocked(const std::string& group_id, Done& done);
  KafkaError HeartbeatLocked(const std::string& group_id, const std::string& member_id,
                             const std::optional<std::string>& instance_id, int32_t generation,
                             Done& done);
  int64_t Now() const { return now_ms_(); }
  static void RunAll(Done& done);

  // --- state machine (group_membership.cc); REQUIRES: mu_ held ---
  Group& GetOrCreate(const std::string& group_id);
  void JoinNew(Group& g, JoinRequest& req, JoinCallback cb, int64_t now, Done& done);
  void JoinStaticKnown(Group& g, const std::string& old_id, JoinRequest& req, JoinCallback cb,
                       int64_t now, Done& done);
  void JoinExisting(Group& g, Member& m, JoinRequest& req, JoinCallback cb, int64_t now,
                    Done& done);
  void AddMember(Group& g, const std::string& member_id, JoinRequest& req, JoinCallback cb,
                 int64_t now, Done& done);
  void UpdateMember(Member& m, JoinRequest& req, int64_t now);
  void PrepareRebalance(Group& g, int64_t now, Done& done);
  void MaybeCompleteJoin(Group& g, int64_t now, Done& done);
  void CompleteJoin(Group& g, int64_t now, Done& done);
  JoinResult CurrentJoinResult(const Group& g, const Member& m) const;
  void RemoveMember(Group& g, const std::string& member_id, KafkaError why, int64_t now,
                    Done& done);
  void SetState(Group& g, GroupState s, int64_t now);
  // FENCED_INSTANCE_ID / UNKNOWN_MEMBER_ID / NONE for a request naming a member.
  KafkaError CheckMember(Group& g, const std::string& member_id,
                         const std::optional<std::string>& instance_id);
  void ExpireSessions(Group& g, int64_t now, Done& done);
  // Expires whatever is due in `g` now, of either protocol: a request for a
  // group first calls this, so a session ends exactly at its deadline
  // whatever the timer's period.
  void ExpireDue(Group& g, int64_t now, Done& done);
  // ExpireDue for every group (ListGroups).
  void ExpireAllDue(int64_t now, Done& done);

  // Share members whose session ran out leave (share_group_coordinator.cc).
  // REQUIRES: mu_ held, g.share set.
  void ExpireShareMembers(Group& g, int64_t now, Done& done);

  // --- KIP-848 consumer groups (consumer_group_coordinator.cc); REQUIRES mu_ ---
  // Members whose session or revocation (rebalance timeout) ran out leave.
  void ExpireConsumerMembers(Group& g, int64_t now);
  // Removes a member, bumps the group epoch and appends the records.
  void RemoveConsumerMember(Group& g, const std::string& member_id, int64_t now,
                            std::vector<GroupLog::Entry>* records);
  // Keeps Group::state in step with the consumer group's membership.
  void SyncConsumerGroupState(Group& g, int64_t now);
  // Turns an empty classic group into a consumer group and back (Kafka's
  // upgrade/downgrade of empty groups); appends the records.
  void ConvertToConsumerGroup(Group& g, std::vector<GroupLog::Entry>* records);
  void ConvertToClassicGroup(Group& g, std::vector<GroupLog::Entry>* records);
  // OffsetCommit checks for a consumer-protocol group (KIP-848).
  KafkaError CheckConsumerCommit(Group& g, const CommitRequest& req);
  void AppendRecords(const std::string& group_id, const std::vector<GroupLog::Entry>& records);
  // Replay of kinds 13-18; FinishConsumerGroupLoad settles a loaded group.
  void ApplyConsumerLogEntry(const RecordKey& key, const std::optional<std::string>& value);
  void FinishConsumerGroupLoad(Group& g, int64_t now);
  // Whole-group tombstones of either kind (deletion, retention).
  void AppendGroupTombstones(const Group& g, std::vector<GroupLog::Entry>* out);

  // --- persistence (group_offsets.cc); REQUIRES: mu_ held ---
  Status PersistGroup(const Group& g);
  // Commit and CommitTxnOffsets after their checks: appends one record per
  // partition whose metadata fits (`entry` builds it) in one batch, then
  // hands each stored offset, its log_order set, to `store` with the group
  // (created if needed). Per-partition errors go to `out`:
  // OFFSET_METADATA_TOO_LARGE, COORDINATOR_NOT_AVAILABLE when the append
  // fails (`what` names the commit in the log line).
  void StoreOffsets(
      const std::string& group_id, const std::vector<CommitPartition>& partitions, int64_t now,
      const char* what, std::vector<KafkaError>& out,
      const std::function<GroupLog::Entry(const TopicPartitionKey&, const CommittedOffset&)>& entry,
      const std::function<void(Group&, const TopicPartitionKey&, CommittedOffset)>& store);
  // Compacts the log when enough was appended since the last compaction
  // (GroupConfig::log_segment_bytes). REQUIRES mu_.
  void MaybeCompact();
  void ExpireOffsets(int64_t now);

  // --- transactional offsets (group_txn_offsets.cc); REQUIRES: mu_ held ---
  // Records `c` (its log_order set) as pending for the producer in `g`
  // (memory only).
  void AddPendingTxnOffset(Group& g, int64_t producer_id, int16_t producer_epoch,
                           const TopicPartitionKey& tp, CommittedOffset c);
  // The log_order of a replayed offset record whose key currently holds
  // `current` (null: none). A record restating `current` exactly, as a
  // compaction copy replayed after the records it copies does, keeps its
  // order, so that a crash part way through a compaction changes no
  // transaction's outcome; anything else is the newest.
  int64_t ReplayedOrder(const CommittedOffset* current, const CommittedOffset& replayed);
  // Drops the pending offset for `tp` in `g` of `producer_id` (-1 = of
  // every producer), in memory only.
  void ErasePendingTxnOffset(Group& g, const TopicPartitionKey& tp, int64_t producer_id = -1);
  // Commits or drops the producer's pending offsets in every group (not for
  // a fence_only end) and remembers the end's epoch (ended_txns_).
  void ApplyTxnEnd(int64_t producer_id, const TxnEndValue& end);
  // Erases a group with its pending offsets; returns the next group.
  std::map<std::string, Group>::iterator ForgetGroup(std::map<std::string, Group>::iterator it);

  GroupConfig config_;
  std::string data_dir_;
  std::function<int64_t()> now_ms_;
  std::function<void(const std::string&, const std::string&, bool)> share_member_gone_;  // Options'
  std::function<std::map<std::string, std::string>(const std::string&)> group_configs_;  // Options'
  // The settings of `group`: config_ with its group configs applied.
  EffectiveGroupSettings SettingsFor(const std::string& group) const;

  mutable std::mutex mu_;
  std::map<std::string, Group> groups_;  // guarded by mu_
  std::unique_ptr<GroupLog> log_;        // guarded by mu_; null once stopped
  std::shared_ptr<Partition> log_partition_;  // set by Open, then constant
  bool log_partition_attached_ = false;  // cluster mode (Options::log_partition); set by Open
  std::string log_name_;                 // "__consumer_offsets-N" when attached
  bool stopped_ = false;                 // guarded by mu_
  int64_t next_retention_check_ms_ = 0;  // guarded by mu_
  int64_t next_compaction_bytes_ = 0;    // guarded by mu_: log size that triggers MaybeCompact
  int64_t next_log_order_ = 1;           // guarded by mu_: CommittedOffset::log_order
  // Producer id -> the groups holding its pending transactional offsets.
  // Invariant: g in txn_groups_[p] iff groups_[g].pending_txn_offsets has p.
  std::map<int64_t, std::set<std::string>> txn_groups_;  // guarded by mu_
  // Producer id -> its latest transaction end here (the marker's epoch fences
  // older TxnOffsetCommits). Kept in the log (kind 4, carried by compaction)
  // and forgotten after offsets.retention.minutes.
  std::map<int64_t, TxnEndValue> ended_txns_;  // guarded by mu_

  std::condition_variable timer_cv_;
  std::thread timer_;
};

}  // namespace headrace::broker::group
