// The in-flight state of one share-partition (a topic partition as one share
// group reads it, KIP-932), kept by the partition's leader: which records
// between the share-partition start offset (SPSO) and the next offset never
// handed out are available, acquired (by which member, until when),
// acknowledged or archived, and how often each was delivered.
//
// The records are offsets: a member acquires offset ranges (the ShareFetch
// handler sends the log's batches that hold them with the ranges, and the
// client keeps only the records in them) and acknowledges offset ranges, one
// type for the range or one per offset. An offset with no record (compacted
// away, a control record) is acknowledged as a gap and archived.
//
//   Available --Acquire--> Acquired (delivery count + 1, lock until now +
//                                    record_lock_duration_ms)
//   Acquired --ACCEPT--> Acknowledged      --REJECT or GAP--> Archived
//   Acquired --RELEASE, lock expiry, member gone--> Available, or Archived
//            once its delivery count has reached delivery_count_limit
//   Acquired --RENEW--> Acquired, lock until now + record_lock_duration_ms
//
// Acknowledged and archived records at the start are dropped and the SPSO
// moves past them; they are never delivered again. New records are acquired
// only while the in-flight window (next offset - SPSO) is below
// max_in_flight_records (group.share.partition.max.record.locks), so an
// unacknowledged record holds back at most that many after it.
//
// Durable form (WriteShareGroupState's state batches): Snapshot() gives the
// SPSO and the ranges that are not "available, never delivered"; acquired
// records are written as available with their delivery count (a lock does
// not survive a restart: the records are delivered again, at least once).
// Constructing from a snapshot gives back the same deliveries; offsets
// between the SPSO and the snapshot's last range that no range covers are
// available, never delivered.
//
// Threading: not thread-safe; its owner serialises calls.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace headrace::broker::share {

// Kafka's codes: AcknowledgeTypes in ShareFetch/ShareAcknowledge, and the
// delivery states of WriteShareGroupState (Acquired is never persisted).
enum class AckType : int8_t { kGap = 0, kAccept = 1, kRelease = 2, kReject = 3, kRenew = 4 };
enum class RecordState : int8_t { kAvailable = 0, kAcquired = 1, kAcknowledged = 2, kArchived = 4 };

struct SharePartitionConfig {
  int32_t delivery_count_limit = 5;         // share.delivery.count.limit
  int64_t record_lock_duration_ms = 30000;  // share.record.lock.duration.ms
  int32_t max_in_flight_records = 2000;     // group.share.partition.max.record.locks
};

// A range of offsets acquired by one Acquire, all with one delivery count
// (ShareFetchResponse's AcquiredRecords).
struct AcquiredRange {
  int64_t first = 0;
  int64_t last = 0;  // inclusive
  int16_t delivery_count = 0;
  bool operator==(const AcquiredRange&) const = default;
};

// One range of the durable form (WriteShareGroupState's StateBatches).
struct StateBatch {
  int64_t first = 0;
  int64_t last = 0;  // inclusive
  RecordState state = RecordState::kAvailable;
  int16_t delivery_count = 0;
  bool operator==(const StateBatch&) const = default;
};

// Why an acknowledgement was refused; the ShareFetch/ShareAcknowledge
// handlers answer INVALID_RECORD_STATE (121) or INVALID_REQUEST (42).
enum class AckOutcome {
  kOk,
  kInvalidRecordState,  // an offset not acquired by this member (or its lock expired)
  kInvalidRequest,      // first > last, or types neither 1 nor last - first + 1 long, or an unknown type
};

class SharePartition {
 public:
  // A share-partition starting at `start_offset` (the SPSO from
  // share.auto.offset.reset, or a snapshot's) with the ranges of a snapshot
  // (none for a new one). REQUIRES: `persisted` sorted, not overlapping,
  // every range at or after start_offset, none in state kAcquired.
  SharePartition(SharePartitionConfig config, int64_t start_offset,
                 const std::vector<StateBatch>& persisted = {});

  // Acquires for `member` up to `max_records` offsets below `fetchable_end`
  // (the high watermark, or the last stable offset for read_committed):
  // available records from the SPSO first, then new ones from next_offset().
  // Each range returned is contiguous with one delivery count. Empty when
  // nothing is available or the in-flight window is full. An offset may be
  // a gap: the caller archives what the log does not hold (ArchiveGaps).
  // Replaces the settings (the group's configs changed): the lock duration
  // applies to later acquisitions, the delivery limit to later releases and
  // expiries, the in-flight window to later acquisitions.
  void set_config(const SharePartitionConfig& config) { config_ = config; }

  std::vector<AcquiredRange> Acquire(std::string_view member, int64_t fetchable_end,
                                     int32_t max_records, int64_t now_ms);

  // Acknowledges [first, last] for `member`: `types` holds one AckType for
  // the whole range or one per offset. All or nothing: every offset must be
  // acquired by `member` under an unexpired lock, else nothing changes.
  AckOutcome Acknowledge(std::string_view member, int64_t first, int64_t last,
                         std::span<const int8_t> types, int64_t now_ms);

  // Archives the offsets of [first, last] that are acquired (by anyone) or
  // available: offsets the fetch found no record for, records of aborted
  // transactions. Offsets already acknowledged or archived stay so.
  void ArchiveGaps(int64_t first, int64_t last);

  // Makes the records whose lock has passed `now_ms` available again (or
  // archives them at the delivery limit). Returns how many.
  int64_t ExpireLocks(int64_t now_ms);

  // Releases every record `member` holds (it left the group or its share
  // session closed), as RELEASE would. Returns how many.
  int64_t ReleaseMember(std::string_view member);

  // The records below the SPSO were all acknowledged or archived.
  int64_t start_offset() const { return start_; }
  // The first offset never acquired.
  int64_t next_offset() const { return next_; }
  // The earliest lock deadline of an acquired record, or -1 if none.
  int64_t next_lock_deadline_ms() const;

  // The durable form: state batches from start_offset(), coalesced.
  std::vector<StateBatch> Snapshot() const;

  struct Counters {
    int64_t acquired = 0;      // records delivered (each delivery counts)
    int64_t redelivered = 0;   // deliveries with a delivery count above 1
    int64_t acknowledged = 0;  // ACCEPTed
    int64_t archived = 0;      // rejected, gaps, at the delivery limit
    int64_t released = 0;      // RELEASEd, expired or given up by a leaving member
  };
  const Counters& counters() const { return counters_; }
  // Records currently acquired by some member.
  int64_t acquired_now() const;

 private:
  // [first, end) with one state; `member` and `deadline_ms` while acquired.
  struct Range {
    int64_t end = 0;  // exclusive
    RecordState state = RecordState::kAvailable;
    int16_t delivery_count = 0;
    std::string member;
    int64_t deadline_ms = 0;
  };
  using Ranges = std::map<int64_t, Range>;  // keyed by first offset; covers [start_, next_)

  // Splits so that a range starts at `offset` (start_ <= offset <= next_).
  void SplitAt(int64_t offset);
  // Returns the acquired records of [it->first, end) to available (or the
  // archive at the limit); counts them as released.
  void Release(Ranges::iterator it);
  // Drops acknowledged and archived ranges at the start and moves start_.
  void AdvanceStart();
  // Releases the acquired ranges `pred(range)` picks; returns how many records.
  template <typename Pred>
  int64_t ReleaseWhere(Pred pred);

  SharePartitionConfig config_;
  int64_t start_;
  int64_t next_;
  Ranges ranges_;
  Counters counters_;
};

const char* RecordStateName(RecordState s);

}  // namespace headrace::broker::share
