// One partition hosted by this broker: its Log plus the replication-facing
// state Kafka keeps beside it.
//
//   log end offset (LEO)   next offset the log will assign ("appended")
//   flushed offset         everything below is fsynced ("flushed")
//   high watermark (HW)    everything below is committed: visible to
//                          consumers. Single node: the ISR is this broker
//                          alone, so an append advances the HW to the LEO.
//                          With replication the HW will advance as followers
//                          catch up (AdvanceHighWatermark).
//   last stable offset     bound for read_committed; == HW until
//                          transactions exist (then: first open txn offset).
//   leader epoch           0 on a single node.
//
// Invariant: log start <= HW <= LEO; HW never moves backwards (except by an
// explicit truncation, which does not exist yet).
// Threading: all methods are thread-safe. Appends are serialised by
// append_mu_ (which will also guard producer state); reads never take it.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>

#include "broker/partition_dir.h"
#include "broker/producer_state.h"
#include "broker/topic_config.h"
#include "common/uuid.h"
#include "headrace/log.h"
#include "headrace/status.h"
#include "headrace/types.h"

namespace headrace::broker {

class Partition;

// Told when a partition's high watermark moved forward (new data became
// visible). Called on the appending thread, without Partition locks held;
// must be cheap. FetchWaiters implements it.
class PartitionListener {
 public:
  virtual ~PartitionListener() = default;
  virtual void OnHighWatermarkAdvanced(Partition& partition) = 0;
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
};

class Partition {
 public:
  // Opens (and recovers) the log in <data_dir>/<topic>-<partition>.
  // `listener` may be null; otherwise it must outlive the partition.
  static Result<std::shared_ptr<Partition>> Open(const std::string& data_dir,
                                                 const TopicPartition& tp, const Uuid& topic_id,
                                                 const TopicSettings& settings,
                                                 PartitionListener* listener,
                                                 const LogFactory& factory = DefaultLogFactory());
  // Wraps an already-open log (tests, tools). The HW starts at the LEO: on a
  // single node everything that survived recovery was acknowledged.
  Partition(TopicPartition tp, Uuid topic_id, std::unique_ptr<Log> log,
            const TopicSettings& settings, PartitionListener* listener);
  ~Partition();
  Partition(const Partition&) = delete;
  Partition& operator=(const Partition&) = delete;

  // Stamps the leader epoch into each batch, appends them (assigning
  // offsets in place), advances the HW to the LEO and notifies the listener.
  // Batches of idempotent producers are checked against producer_state()
  // first (producer_state.h): a duplicate appends nothing and returns the
  // original base/last offsets (record_count 0).
  // Errors are the Log's (Corruption, TooLarge, InvalidArgument, Closed,
  // IOError) or the producer state's (INVALID_PRODUCER_EPOCH,
  // OUT_OF_ORDER_SEQUENCE_NUMBER as Kafka details); on error nothing is
  // appended.
  Result<AppendInfo> Append(std::span<uint8_t> batches);

  // Consumer read: whole batches from `offset`, at most `max_bytes` (but at
  // least one batch if `min_one_batch`), never at or past the HW
  // (read_uncommitted) or the LSO (read_committed). An offset in
  // [bound, LEO] gives an empty result. Errors: OutOfRange when offset <
  // log start or offset > LEO.
  Result<PartitionRead> Read(Offset offset, int64_t max_bytes, IsolationLevel isolation,
                             bool min_one_batch = true) const;

  // ListOffsets for one partition: `timestamp` is a time in ms or one of
  // kListOffsets*. Offsets at/after the bound (HW or LSO) are not returned.
  // Not found -> {-1, -1}.
  Result<OffsetAndTimestamp> ListOffset(int64_t timestamp, IsolationLevel isolation) const;
  OffsetAndTimestamp EarliestOffset() const;                       // {log start, -1}
  OffsetAndTimestamp LatestOffset(IsolationLevel isolation) const; // {HW or LSO, -1}

  // DeleteRecords: moves the log start to `offset` (-1 = the HW). Returns the
  // new log start. Errors: OutOfRange when offset > HW.
  Result<Offset> DeleteRecordsBefore(Offset offset);

  // Replication hook: moves the HW forward to min(offset, LEO); never back.
  void AdvanceHighWatermark(Offset offset);

  // Maintenance (called by the maintenance thread and the flusher).
  Status Flush();
  Status MaybeFlush();
  Status MaybeRoll(TimestampMs now);
  // Deletes old segments when the topic's cleanup.policy includes delete.
  Result<RetentionReport> ApplyRetention(TimestampMs now);
  // New topic configuration (AlterConfigs); applies from the next operation.
  void SetSettings(const TopicSettings& settings);
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
  Offset log_start_offset() const { return log_->start_offset(); }
  Offset log_end_offset() const { return log_->end_offset(); }
  Offset high_watermark() const { return Offset(high_watermark_.load(std::memory_order_acquire)); }
  Offset last_stable_offset() const { return high_watermark(); }
  Offset flushed_offset() const { return log_->flushed_offset(); }
  int64_t size_bytes() const { return log_->size_bytes(); }
  const std::string& dir() const { return log_->dir(); }
  const RecoveryReport& recovery_report() const { return log_->recovery_report(); }
  // REQUIRES: the caller holds append_mutex() (producer state checks).
  ProducerStateTable& producer_state() { return producer_state_; }
  std::mutex& append_mutex() { return append_mu_; }

 private:
  // REQUIRES: append_mu_ held. Rebuilds producer_state_ on first use, then
  // checks `headers`; returns the original offsets for a duplicate.
  Result<std::optional<AppendInfo>> CheckProducerStateLocked(std::span<const BatchHeader> headers);
  // REQUIRES: append_mu_ held. Returns true if the HW moved.
  bool AdvanceHighWatermarkLocked(Offset offset);

  const TopicPartition tp_;
  const Uuid topic_id_;
  const std::unique_ptr<Log> log_;
  PartitionListener* const listener_;
  std::atomic<int32_t> leader_epoch_{0};
  std::atomic<int64_t> high_watermark_{0};  // written under append_mu_
  std::atomic<bool> retention_delete_{true};  // cleanup.policy contains delete
  std::mutex append_mu_;                      // serialises Append; guards producer_state_
  ProducerStateTable producer_state_;
};

}  // namespace headrace::broker
