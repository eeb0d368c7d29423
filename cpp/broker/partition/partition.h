// One partition hosted by this broker: the state machine that owns every
// offset of it, over the Log that stores its bytes. Nothing else computes
// these offsets (docs/durability.md states the policy):
//
//   log start offset     first offset still in the log
//   log end offset (LEO) next offset the log will assign ("appended")
//   flushed offset       everything below is fsynced ("flushed"); the
//                        flusher thread moves it (OnFlushed)
//   high watermark (HW)  everything below is committed: visible to
//                        consumers and acknowledged to acks=all producers.
//                        As leader: the minimum over the ISR of each
//                        member's LEO and, when commit_requires_fsync
//                        (headrace.acks.all.fsync), of each member's flushed
//                        offset. As follower: what the leader reports,
//                        bounded by the local LEO. At start: the LEO (or
//                        flushed offset) on a single node; in cluster mode
//                        min(checkpointed HW, LEO) (StartHighWatermarkAt).
//   last stable offset   bound for read_committed (LSO): the minimum of the
//                        HW and the first offset of the earliest
//                        transaction that is ongoing (producer_state.h) or
//                        whose marker is not yet committed, on leaders and
//                        followers alike.
//   role, leader epoch   leader or follower, and the epoch it serves in;
//                        the leader-epoch cache (leader_epoch_cache.h)
//                        records where each epoch started writing.
//   replicas, ISR        the assigned replicas, the in-sync ones, and each
//                        follower's LEO and flushed offset.
//
// Invariant: log start <= HW <= LEO and HW <= flushed offset when
// commit_requires_fsync (leader); HW never moves backwards except by an
// explicit truncation (TruncateTo / TruncateByEpoch, follower side).
// Every change of a watermark is told to the PartitionListener (the
// purgatory) after the partition's lock is released.
//
// Threading: all methods are thread-safe. Writers (appends, truncation,
// role and replica changes, flush completion) are serialised by mu_, which
// also guards the producer state and the epoch cache; the offsets readers
// need are published in atomics, so reads never take mu_. The aborted-
// transaction index has its own small mutex (txn_index_mu_, after mu_),
// which a read_committed read takes only when aborts are indexed.
// Lock order: txn_index_write_mu_ -> mu_ -> txn_index_mu_, and mu_ -> view_mu_
// (the role view: leader, replicas and ISR, read without mu_).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "broker/base/broker_metrics.h"
#include "broker/partition/leader_epoch_cache.h"
#include "broker/partition/partition_dir.h"
#include "broker/partition/producer_state.h"
#include "broker/config/topic_config.h"
#include "broker/partition/txn_index.h"
#include "common/uuid.h"
#include "headrace/log.h"
#include "log/cleaner.h"
#include "headrace/status.h"
#include "headrace/types.h"

namespace headrace::broker {

class Partition;

// The offsets a delayed operation can wait for (Purgatory).
enum class Watermark : uint8_t { kLogEnd = 0, kFlushed = 1, kHighWatermark = 2, kLastStable = 3 };
inline constexpr size_t kWatermarkCount = 4;
using WatermarkSet = uint8_t;  // bit (1 << Watermark)
constexpr WatermarkSet WatermarkBit(Watermark w) { return WatermarkSet(1u << static_cast<unsigned>(w)); }

// Told when a partition's offsets move. Called on the thread that moved
// them (appending, flusher, replica fetcher), with no Partition lock held;
// must be cheap. The Purgatory implements it.
class PartitionListener {
 public:
  virtual ~PartitionListener() = default;
  // The watermarks in `changed` moved forward.
  virtual void OnWatermarksAdvanced(Partition& partition, WatermarkSet changed) = 0;
  // The partition went offline, was truncated or closed, or changed role
  // or leader epoch: every waiter on it must re-check. An ISR change is not
  // a state change (only its watermark effect is reported).
  virtual void OnStateChanged(Partition& partition) = 0;
};

// Where a partition asks for its log to be fsynced: the flusher thread,
// which then calls Partition::FlushLog. Schedule must be cheap and may be
// called from any thread; a partition is scheduled at most once until its
// FlushLog starts.
class FlushScheduler {
 public:
  virtual ~FlushScheduler() = default;
  virtual void Schedule(std::shared_ptr<Partition> partition) = 0;
};

// What a partition is wired to. Pointers may be null (tests); otherwise
// they must outlive the partition.
struct PartitionServices {
  PartitionListener* listener = nullptr;  // the purgatory
  FlushScheduler* flusher = nullptr;      // null: only explicit FlushLog calls fsync
  // headrace.acks.all.fsync: a record is committed (below the HW) only once
  // every ISR member has fsynced it.
  bool commit_requires_fsync = false;
  // headrace.follower.uncached.writes: how follower appends treat the page
  // cache.
  WriteCache follower_write_cache = WriteCache::kKeep;
  int32_t local_broker_id = 0;
  FileEnv* file_env = nullptr;  // the partition's own files (epoch cache); null = the OS
  // Called once when an I/O error of the partition's own takes it offline
  // (not for TakeOffline), after the listener heard of it, with no lock
  // held: how the failure reaches its log directory (LogDirs). May be empty.
  std::function<void(const Partition&)> on_offline;
  BrokerMetrics* metrics = nullptr;  // null: metrics off (docs/metrics.md)
};

// A partition's log configuration: `config` with flush_on_append off (the
// flusher thread fsyncs partition logs, never the appending thread).
inline LogConfig PartitionLogConfig(LogConfig config) {
  config.flush_on_append = false;
  return config;
}

enum class PartitionRole : uint8_t { kLeader, kFollower };

// A follower's truncation step (TruncateByEpoch).
struct TruncationResult {
  Offset truncated_to;  // the log end after the step
  // False when the follower did not know the leader's epoch: it must ask the
  // leader again with its own latest epoch (KIP-279).
  bool completed = true;
};

// Opens a log; Log::Open by default, replaceable in tests.
using LogFactory =
    std::function<Result<std::unique_ptr<Log>>(const std::string& dir, const LogConfig& config)>;
LogFactory DefaultLogFactory();

// Fetch/ListOffsets isolation level, numbered as on the wire.
enum class IsolationLevel : int8_t { kReadUncommitted = 0, kReadCommitted = 1 };

// ListOffsets special timestamps (wire values).
inline constexpr int64_t kListOffsetsLatest = -1;        // HW (or LSO)
inline constexpr int64_t kListOffsetsEarliest = -2;      // log start
inline constexpr int64_t kListOffsetsMaxTimestamp = -3;  // KIP-734
inline constexpr int64_t kListOffsetsEarliestLocal = -4; // KIP-405; == earliest here

struct OffsetAndTimestamp {
  Offset offset{-1};                     // -1 = none (Kafka's UNKNOWN_OFFSET)
  TimestampMs timestamp = kNoTimestamp;  // -1 = none
};

// What a consumer read returns: the data plus the offsets a Fetch response
// reports for the partition, taken at the same moment.
struct PartitionRead {
  ReadResult data;
  Offset high_watermark;
  Offset last_stable_offset;
  Offset log_start_offset;
  Offset log_end_offset;  // the LEO the read was bounded by (ReadForFollower)
  // read_committed: the aborted transactions overlapping the range read
  // (last offset >= the fetch offset, first offset < the LSO), by first
  // offset. Empty otherwise.
  std::vector<AbortedTxn> aborted_transactions;
};

// A producer with state in a partition (DescribeProducers).
struct ProducerDescription {
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  int32_t last_sequence = -1;
  int64_t last_timestamp = -1;
  int32_t coordinator_epoch = -1;
  int64_t current_txn_start_offset = -1;
};

class Partition : public std::enable_shared_from_this<Partition> {
 public:
  // Opens (and recovers) the log in <data_dir>/<topic>-<partition> and its
  // leader-epoch cache; the partition starts as the only replica and leader
  // of its latest cached epoch (0 for a new one).
  static Result<std::shared_ptr<Partition>> Open(const std::string& data_dir,
                                                 const TopicPartition& tp, const Uuid& topic_id,
                                                 const TopicSettings& settings,
                                                 const PartitionServices& services,
                                                 const LogFactory& factory = DefaultLogFactory());
  // Wraps an already-open log (tests, tools). The HW starts at the flushed
  // offset when commit_requires_fsync, else at the LEO: what survived
  // recovery was acknowledged or is fsynced by recovery. The epoch cache is
  // kept in memory only unless Open loads it.
  Partition(TopicPartition tp, Uuid topic_id, std::unique_ptr<Log> log,
            const TopicSettings& settings, const PartitionServices& services);
  ~Partition();
  Partition(const Partition&) = delete;
  // Cluster mode, at start (before any role change, append or reader):
  // the HW starts at the one checkpointed for this partition
  // (replication-offset-checkpoint, hw_checkpoint.h; Offset(0) when it has
  // none), bounded to [log start, LEO] (and the flushed offset when
  // commit_requires_fsync), instead of the constructor's LEO: records the
  // old ISR never committed stay invisible until a leader's ISR has them.
  // The LSO follows. From then on the HW moves only by the usual rules.
  void StartHighWatermarkAt(Offset checkpointed);
  Partition& operator=(const Partition&) = delete;

  // ---- leader ----
  // Checks `required_acks` == -1 against min.insync.replicas (NOT_ENOUGH_
  // REPLICAS when the ISR is smaller), stamps the leader epoch into each
  // batch, checks idempotent producers' batches (a duplicate appends nothing
  // and returns the original offsets, record_count 0), appends (assigning
  // offsets in place), then moves the HW as far as the policy allows and
  // asks the flusher for an fsync when needed.
  // Errors: NotLeader (a follower), NotEnoughReplicas, the Log's
  // (Corruption, TooLarge, InvalidArgument, Closed, IOError), KafkaStorage
  // (offline) or the producer state's; on error nothing is appended.
  Result<AppendInfo> AppendAsLeader(std::span<uint8_t> batches, int16_t required_acks = 1);
  // Appends an end-transaction marker for `producer_id` (one control batch:
  // transactional | control, base sequence -1, stamped with the leader
  // epoch), ends its transaction and, for an ABORT, indexes the aborted
  // transaction. A producer without an open transaction still gets its
  // marker (harmless, as in Kafka). The caller waits for the HW to pass
  // info.last_offset for the marker to be committed.
  // Errors: NOT_LEADER_OR_FOLLOWER (a follower), INVALID_PRODUCER_EPOCH /
  // TRANSACTION_COORDINATOR_FENCED (ProducerStateTable::CheckMarker),
  // KafkaStorage (offline), the Log's.
  Result<AppendInfo> AppendTxnMarker(int64_t producer_id, int16_t producer_epoch,
                                     int32_t coordinator_epoch, bool commit);
  // A follower's fetch reached `log_end` and it has fsynced below
  // `flushed`: updates the replica's state and the HW, and when the follower
  // was caught up at `now_ms` (SteadyNowMs() clock; -1 = now) records it for
  // the ISR (Kafka's lastCaughtUpTime rule: a fetch at or past the leader's
  // LEO catches up now; one at or past the LEO the leader had at the
  // follower's previous fetch catches up as of that previous fetch).
  // Ignored for brokers that are not replicas (and for the local broker), so
  // a fetch from an unknown replica id is served without effect.
  // `broker_epoch`: the epoch the fetch carried (KIP-380; -1 = none),
  // named by ISR additions (KIP-903; docs/cluster.md, "Broker epochs").
  void UpdateFollowerState(int32_t broker_id, Offset log_end, Offset flushed,
                           int64_t now_ms = -1, int64_t broker_epoch = -1);
  // The ISR this leader would have now (shrink and expand together), or
  // nullopt when it is the current one, when this partition is not the
  // leader, or when it is the same ISR this partition proposed last (a
  // proposal is made once until the ISR or the leader epoch changes, or
  // kIsrReproposeMs passed).
  //   shrink: a follower in the ISR leaves it when its LEO is short of the
  //           leader's and it has not been caught up within
  //           `lag_time_max_ms` of `now_ms` (replica.lag.time.max.ms).
  //   expand: a replica outside the ISR joins when its LEO is at or past
  //           both the HW and the first offset of the current leader epoch.
  // Never applies the change: the control plane writes it to ZooKeeper and
  // applies it through UpdateIsr. `now_ms` is on the SteadyNowMs() clock.
  // A proposal the control plane did not apply (its write was refused, e.g.
  // the added broker is shutting down) is made again after kIsrReproposeMs.
  // `fetch_epochs` (optional) gets each proposed follower's fetch epoch. A
  // gap over kLeaderStallMs between calls is the leader's stall, not lag
  // (docs/cluster.md, "ISR changes").
  static constexpr int64_t kLeaderStallMs = 1000, kIsrReproposeMs = 5000;
  std::optional<std::vector<int32_t>> ProposeIsr(
      int64_t now_ms, int64_t lag_time_max_ms, std::map<int32_t, int64_t>* fetch_epochs = nullptr);
  // Milliseconds of std::chrono::steady_clock: the clock of the ISR times.
  static int64_t SteadyNowMs();

  // ---- follower ----
  // Appends batches fetched from the leader with their own offsets and
  // epochs (contiguous with the LEO) and records new epochs in the cache.
  // `fetched_in_epoch` >= 0: the leader epoch the fetch was made in; when the
  // partition has moved to another epoch since (BecomeFollower), nothing is
  // appended and the answer is FENCED_LEADER_EPOCH (a fetcher of the old
  // leader racing with the new assignment).
  Result<AppendInfo> AppendAsFollower(std::span<uint8_t> batches,
                                      LeaderEpoch fetched_in_epoch = LeaderEpoch(-1));
  // The leader's high watermark as it reported it (bounded by the LEO).
  void SetHighWatermarkFromLeader(Offset leader_hw);
  // Removes every record at or after `offset` (whole batches), drops epoch
  // cache entries from there and rebuilds producer state. May move the HW
  // back. REQUIRES: log start <= offset <= LEO.
  Status TruncateTo(Offset offset);
  // KIP-101/279: the leader answered OffsetForLeaderEpoch for our latest
  // epoch with (leader_epoch, end_offset): truncates accordingly.
  Result<TruncationResult> TruncateByEpoch(LeaderEpoch leader_epoch, Offset end_offset);
  // The leader's log starts past everything this follower has (its log
  // start is above our LEO, or our fetch offset fell below it): drops the
  // whole log and its epoch cache and continues empty from `offset` (log
  // start = LEO = flushed = HW = offset). Errors: those of the Log.
  Status TruncateFullyAndStartAt(Offset offset);

  // ---- role changes (the controller's decisions) ----
  // Leads `epoch` (> the current one, or equal on a restart) with these
  // replicas and ISR (both containing the local broker); the epoch's start
  // is the current LEO.
  Status BecomeLeader(LeaderEpoch epoch, std::vector<int32_t> replicas, std::vector<int32_t> isr);
  Status BecomeFollower(LeaderEpoch epoch, int32_t leader_id, std::vector<int32_t> replicas);
  // A follower replica being swapped for its copy in another log directory
  // (LogDirMover, cluster mode): from the return of (true) on,
  // AppendAsFollower and the truncations answer NOT_LEADER_OR_FOLLOWER (the
  // replica fetcher backs off and retries; it is then pointed at the copy),
  // so the log stays still for the mover's last copy. (false): a failed
  // swap gives the replica back.
  void SealFollowerWrites(bool sealed);
  // A new ISR decided for this leader (must contain the local broker).
  Status UpdateIsr(std::vector<int32_t> isr);

  // ---- consumers ----
  // Whole batches from `offset`, at most `max_bytes` (but at least one batch
  // if `min_one_batch`), never at or past the HW (read_uncommitted) or the
  // LSO (read_committed). An offset in [bound, LEO] gives an empty result.
  // Errors: OutOfRange when offset < log start or offset > LEO;
  // KafkaStorage when offline.
  Result<PartitionRead> Read(Offset offset, int64_t max_bytes, IsolationLevel isolation,
                             bool min_one_batch = true) const;
  // A follower fetch (the leader side): as Read, but bounded by the log end
  // offset instead of the HW (followers copy uncommitted records too).
  Result<PartitionRead> ReadForFollower(Offset offset, int64_t max_bytes,
                                        bool min_one_batch = true) const;
  // ListOffsets for one partition: `timestamp` is a time in ms or one of
  // kListOffsets*. Offsets at/after the bound (HW or LSO) are not returned.
  // Not found -> {-1, -1}. Errors: KafkaStorage when offline.
  Result<OffsetAndTimestamp> ListOffset(int64_t timestamp, IsolationLevel isolation) const;
  OffsetAndTimestamp EarliestOffset() const;                       // {log start, -1}
  OffsetAndTimestamp LatestOffset(IsolationLevel isolation) const; // {HW or LSO, -1}
  // OffsetForLeaderEpoch (API 23): the end offset of `epoch` in this log.
  EpochEndOffset EndOffsetForEpoch(LeaderEpoch epoch) const;
  // The epoch that wrote `offset` (the cache entry covering it); -1 if none.
  LeaderEpoch EpochAt(Offset offset) const;

  // DeleteRecords: moves the log start to `offset` (-1 = the HW). Returns the
  // new log start. Errors: OutOfRange when offset > HW.
  Result<Offset> DeleteRecordsBefore(Offset offset);

  // ---- flushing (the flusher thread; a follower's replica fetcher only
  // when there is no flusher) ----
  // fsyncs the log (and persists the epoch cache when it changed), then
  // publishes the new flushed offset and HW. On failure the partition goes
  // offline: appends and reads fail with KafkaStorage from then on and
  // nothing after the failure is ever reported flushed or committed.
  Status FlushLog();
  // Asks the flusher for an fsync when the flush policy (flush.messages /
  // flush.ms) or commit_requires_fsync wants one (maintenance thread).
  void MaybeScheduleFlush();
  // Asks the flusher for an fsync of what is appended, whatever the policy.
  void RequestFlush() { ScheduleFlush(); }
  // A flusher thread fsyncs this partition's appends (PartitionServices::
  // flusher); false: only explicit FlushLog calls do (tests).
  bool has_flusher() const { return services_.flusher != nullptr; }
  // Blocks until the flushed offset reaches `offset`, the partition goes
  // offline, or `deadline` passes; true when reached. Woken by FlushLog's
  // completion (success or failure). A follower's replica fetcher waits
  // here for the flusher before it reports a flushed offset (leader_fetcher.cc).
  bool WaitFlushed(Offset offset, std::chrono::steady_clock::time_point deadline) const;

  // Maintenance.
  Status MaybeRoll(TimestampMs now);
  // producer.id.expiration.ms: forgets the producers without an open
  // transaction whose last write is older than `expiration_ms` before
  // `now_ms` (wall clock). Returns how many.
  size_t RemoveExpiredProducers(int64_t now_ms, int64_t expiration_ms);
  // Deletes old segments when the topic's cleanup.policy includes delete.
  Result<RetentionReport> ApplyRetention(TimestampMs now);
  // New topic configuration (AlterConfigs); applies from the next operation.
  void SetSettings(const TopicSettings& settings);
  // Its log directory failed (LogDirs): the partition goes offline as an
  // I/O error of its own would take it (KAFKA_STORAGE_ERROR from then on),
  // without a log line of its own (the directory's is the one). Idempotent.
  void TakeOffline() {
    if (!offline_.exchange(true)) AfterChange(0, /*state_changed=*/true);
    NotifyFlushWaiters();
  }

  // ---- replication throttles (replication/replication_quota.h) ----
  enum class ThrottleSide { kLeader = 0, kFollower = 1 };
  // The topic's leader.replication.throttled.replicas (kLeader) or
  // follower.replication.throttled.replicas (kFollower) names this
  // partition on `broker` ("*" names it on every broker), as SetSettings
  // last gave them. partition_replication.cc.
  bool ReplicationThrottled(ThrottleSide side, int32_t broker) const;
  // `replica` is in this partition's ISR.
  bool InIsr(int32_t replica) const;

  // ---- log compaction (partition_clean.cc; docs/compaction.md) ----
  // The topic's compaction settings, as SetSettings last gave them.
  struct CompactionSettings {
    bool compact = false;  // cleanup.policy contains compact
    int64_t segment_bytes = 1LL << 30;  // segment.bytes: a cleaned group's bound
    std::optional<double> min_cleanable_dirty_ratio;
    std::optional<int64_t> delete_retention_ms;
    std::optional<int64_t> min_compaction_lag_ms;
    std::optional<int64_t> max_compaction_lag_ms;
  };
  CompactionSettings compaction_settings() const;
  // Fills what the partition decides of a cleaning pass: the bound
  // (min(HW, LSO)), its aborted transactions and each producer's last
  // batch. Errors: KafkaStorage when offline.
  Status FillCleanRequest(CleanRequest* req);
  // The log's cleanable state / one cleaning pass over the log (a cleaner
  // thread). An I/O error takes the partition offline.
  Result<CleanableState> Cleanable(const CleanRequest& req) const;
  Result<CleanReport> Clean(const CleanRequest& req);
  // Flushes and closes the log; later appends/reads fail with Closed.
  Status Close();
  // Closes the log without flushing it (the partition is being deleted);
  // later appends/reads fail with Closed.
  Status Abandon();

  const TopicPartition& topic_partition() const { return tp_; }
  const std::string& topic() const { return tp_.topic; }
  int32_t partition() const { return tp_.partition; }
  const Uuid& topic_id() const { return topic_id_; }
  LeaderEpoch leader_epoch() const { return LeaderEpoch(leader_epoch_.load()); }
  bool is_leader() const { return is_leader_.load(std::memory_order_acquire); }
  bool offline() const { return offline_.load(std::memory_order_acquire); }
  // headrace.acks.all.fsync as wired (PartitionServices): a follower
  // reports its flushed offset to the leader, which commits only what every
  // ISR member fsynced (docs/durability.md).
  bool commit_requires_fsync() const { return services_.commit_requires_fsync; }
  // Counts state changes (offline, role or leader epoch, truncation,
  // close; not ISR changes); bumped before
  // the listener hears of one. A waiter that read it before acting sees a
  // change that happened before it was indexed (Purgatory::Watch).
  uint64_t state_version() const { return state_version_.load(std::memory_order_acquire); }
  Offset log_start_offset() const { return log_->start_offset(); }
  Offset log_end_offset() const { return log_->end_offset(); }
  Offset high_watermark() const { return Offset(high_watermark_.load(std::memory_order_acquire)); }
  Offset last_stable_offset() const {
    return Offset(last_stable_offset_.load(std::memory_order_acquire));
  }
  // The ongoing transactions, by first offset (tests, DescribeProducers).
  std::vector<OngoingTxn> ongoing_transactions() const;
  // Every aborted transaction indexed (tests).
  std::vector<AbortedTxn> aborted_transactions() const;
  // DescribeProducers (API 61): the producers with state in this partition.
  std::vector<ProducerDescription> DescribeProducers() const;
  Offset flushed_offset() const { return log_->flushed_offset(); }
  Offset watermark(Watermark which) const;
  int32_t min_insync_replicas() const { return min_insync_replicas_.load(); }
  int isr_size() const { return isr_size_.load(std::memory_order_acquire); }
  // Snapshot for Metadata / DescribeCluster / /metrics / tests. Never waits
  // for mu_: an append holds mu_ across its write, which the disk can stall
  // for a long time (the role view below).
  int32_t leader_id() const;
  std::vector<int32_t> replicas() const;
  std::vector<int32_t> isr() const;
  std::vector<EpochEntry> epoch_entries() const;
  int64_t size_bytes() const { return log_->size_bytes(); }
  int segment_count() const { return log_->segment_count(); }
  // The topic's counters (docs/metrics.md); null when metrics are off.
  TopicMetrics* topic_metrics() const { return topic_metrics_.get(); }
  const std::string& dir() const { return log_->dir(); }
  const RecoveryReport& recovery_report() const { return log_->recovery_report(); }

 private:
  // The INFO line of one retention pass that deleted segments.
  void LogRetentionDeletion(const RetentionReport& report) const;
  struct ReplicaState {
    int32_t broker_id;
    Offset log_end{0};
    Offset flushed{0};
    // ISR tracking (leader side, SteadyNowMs() clock): when the replica was
    // last caught up with the leader's LEO, and the leader's LEO and the time
    // at its previous fetch.
    int64_t last_caught_up_ms = 0;
    Offset last_fetch_leader_leo{0};
    int64_t last_fetch_ms = 0;
    // It fetched since this broker became leader, and since it last left
    // the ISR (its offsets are known and current): only then can it join
    // the ISR (an empty log must not admit a replica that never fetched,
    // e.g. one being added by a reassignment; a replica dropped for a failed
    // log directory stops fetching and must stay out).
    bool fetched = false;
    // The broker epoch its last fetch carried (-1: none).
    int64_t broker_epoch = -1;
  };
  // REQUIRES: mu_ held. Rebuilds producer_state_ on first use, then checks
  // `headers`; returns the original offsets for a duplicate.
  Result<std::optional<AppendInfo>> CheckProducerStateLocked(std::span<const BatchHeader> headers);
  // REQUIRES: mu_ held. Recomputes the HW (leader: from the ISR; follower:
  // from the leader's) and the LSO, and returns the watermarks that moved
  // since `before`.
  WatermarkSet RecomputeLocked(Offset log_end_before, Offset flushed_before);
  // REQUIRES: mu_ held. Publishes LSO = min(HW, first offset of the
  // earliest transaction that is ongoing or whose marker is not yet below
  // the HW, as Kafka's first unstable offset); returns kLastStable's bit
  // when it moved forward (it moves back only on truncation, which tells
  // the listener as a state change).
  WatermarkSet PublishLastStableLocked();
  // REQUIRES: mu_ held. Loads the producer state (and ongoing transactions)
  // once: from the log (producer_state.h). Later appends keep it current.
  Status EnsureProducerStateLocked();
  // REQUIRES: mu_ held. Applies the producer batches of `bytes` (appended
  // with their final offsets) to the producer state; ABORT markers are
  // indexed.
  void ApplyProducerBatchesLocked(std::span<const uint8_t> bytes);
  // REQUIRES: mu_ held. Records a marker's completed transaction: ABORTs go
  // to the aborted-transaction index of the segment holding the marker.
  void IndexCompletedTxnLocked(const CompletedTxn& txn);
  // Writes the dirty .txnindex files (FlushLog, Close); no lock held.
  Status WriteTxnIndex();
  // REQUIRES: mu_ held. After an append or a roll: when the active segment
  // changed, takes a producer snapshot at the LEO for the flusher to write
  // (producer_snapshot.h) and returns true (the caller schedules a flush).
  bool MaybeSnapshotAfterRollLocked();
  // The end of every append (leader, follower, marker). REQUIRES: `lock`
  // holds mu_; `info` is the log's answer to an append begun at
  // `leo_before` / `flushed_before`. An I/O error takes the partition
  // offline; another error is returned as is; on success `record` notes
  // what was appended (epochs, producer batches) and the moved offsets are
  // published with the lock released.
  Result<AppendInfo> FinishAppend(std::unique_lock<std::mutex>& lock, Result<AppendInfo> info,
                                  Offset leo_before, Offset flushed_before,
                                  const std::function<Status()>& record);
  // Writes `pending` once the log below its offset is flushed (FlushLog);
  // a failure is logged (snapshots only shorten the replay at open).
  void WritePendingSnapshot(std::optional<std::pair<Offset, std::string>> pending);
  FileEnv& file_env() const;
  // REQUIRES: mu_ held. The epoch cache from the file, or rebuilt from the
  // log's batches when the file is missing.
  Status LoadEpochCacheLocked();
  // REQUIRES: mu_ held. Records the epochs of batches appended as follower.
  Status AssignEpochsLocked(std::span<const uint8_t> batches);
  // Tells the listener (no lock held) and asks the flusher when needed.
  void AfterChange(WatermarkSet changed, bool state_changed);
  void ScheduleFlush();
  // After an append: an fsync is due when commits need one or the log's
  // flush policy says so (no second look at the log).
  void ScheduleFlushAfter(const AppendInfo& info) {
    if (services_.commit_requires_fsync || info.flush_due) ScheduleFlush();
  }
  Status GoOffline(const Status& cause);
  // FlushLog's work; FlushLog then wakes WaitFlushed.
  Status FlushLogOnce();
  void NotifyFlushWaiters() const;
  // Read and ReadForFollower: records from `offset` below `limit`
  // (kHighWatermark, kLastStable or kLogEnd) of one snapshot of the offsets.
  Result<PartitionRead> ReadUpTo(Offset offset, int64_t max_bytes, bool min_one_batch,
                                 Watermark limit) const;
  Status CheckServing() const;
  // NOT_LEADER_OR_FOLLOWER once SealFollowerWrites ran. REQUIRES: mu_ held.
  Status CheckFollowerWritesLocked() const;
  void SetCompactionSettings(const TopicSettings& settings);  // partition_clean.cc
  void SetThrottleSettings(const TopicSettings& settings);    // partition_replication.cc

  const TopicPartition tp_;
  const Uuid topic_id_;
  const std::unique_ptr<Log> log_;
  const PartitionServices services_;
  const std::shared_ptr<TopicMetrics> topic_metrics_;  // null: metrics off
  std::atomic<int32_t> leader_epoch_{0};
  std::atomic<bool> is_leader_{true};
  std::atomic<bool> offline_{false};
  bool follower_writes_sealed_ = false;  // guarded by mu_ (SealFollowerWrites)
  std::atomic<uint64_t> state_version_{0};
  std::atomic<int64_t> high_watermark_{0};  // written under mu_
  std::atomic<int64_t> last_stable_offset_{0};  // written under mu_
  std::atomic<int32_t> min_insync_replicas_{1};
  std::atomic<int> isr_size_{1};
  std::atomic<bool> retention_delete_{true};  // cleanup.policy contains delete
  std::atomic<bool> flush_scheduled_{false};  // in the flusher's queue
  // WaitFlushed's wake-up: notified after each FlushLog (a leaf mutex).
  mutable std::mutex flush_wait_mu_;
  mutable std::condition_variable flush_wait_cv_;
  mutable std::mutex compaction_mu_;           // a leaf; guards compaction_
  CompactionSettings compaction_;
  // Replication throttles by ThrottleSide: the brokers named for this
  // partition (-1 = every broker, "*"). Guarded by throttle_mu_ (a leaf).
  mutable std::mutex throttle_mu_;
  std::vector<int32_t> throttled_brokers_[2];

  // The role view readers get without mu_: leader_id_, replicas_' ids and
  // isr_, copied by PublishViewLocked whenever they change. Written under
  // mu_ then view_mu_ (a leaf), read under view_mu_ alone.
  mutable std::mutex view_mu_;
  int32_t view_leader_id_ = -1;
  std::vector<int32_t> view_replicas_;
  std::vector<int32_t> view_isr_;
  // REQUIRES: mu_ held (or the constructor). Publishes the role view.
  void PublishViewLocked();

  mutable std::mutex mu_;  // serialises writers; guards everything below
  int32_t leader_id_;
  std::vector<ReplicaState> replicas_;  // the local broker first
  std::vector<int32_t> isr_;
  // The first offset of the epoch this partition leads (its LEO when it
  // became leader): a replica joins the ISR only once past it.
  Offset leader_epoch_start_{0};
  // The last ISR ProposeIsr returned and when; cleared when the ISR or the
  // role changes, so one change is proposed once per kIsrReproposeMs.
  std::optional<std::vector<int32_t>> last_proposed_isr_;
  int64_t last_proposed_at_ms_ = 0;
  int64_t last_isr_check_real_ms_ = 0;  // SteadyNowMs() of the last ProposeIsr as leader
  LeaderEpochCache epoch_cache_;
  ProducerStateTable producer_state_;
  // Transactions ended by a marker at or past the HW: first offset ->
  // marker offset. They bound the LSO until the HW passes their marker.
  std::map<Offset, Offset> unreplicated_txns_;

  // Guards txn_index_ (taken after mu_; a read_committed read takes it
  // alone, and only when aborted_count_ > 0).
  mutable std::mutex txn_index_mu_;
  AbortedTxnIndex txn_index_;
  std::atomic<size_t> aborted_count_{0};
  // Serialises the .txnindex file writes (taken before mu_).
  std::mutex txn_index_write_mu_;

  // Producer snapshots (guarded by mu_): kept only by partitions Open made.
  bool snapshots_ = false;
  Offset active_segment_base_{-1};  // the active segment at the last check
  std::optional<std::pair<Offset, std::string>> pending_snapshot_;  // offset, bytes
};

}  // namespace headrace::broker
