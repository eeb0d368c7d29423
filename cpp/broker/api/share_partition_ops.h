// What the ShareFetch and ShareAcknowledge handlers share (KIP-932,
// docs/share-groups.md): finding a share-partition's log partition here,
// applying acknowledgement batches, acquiring records and reading the log's
// batches that hold them.
//
// A share-partition lives on the partition's leader (share/share_registry.h)
// and is created by the group's first ShareFetch of the partition, where
// the group's share.auto.offset.reset says (latest, the
// high watermark, by default); each acquisition uses the group's current
// lock duration and delivery count limit (SharePartitionConfigOf). Records
// are acquired up to the high watermark (share.isolation.level=
// read_uncommitted, the default) or the last stable offset (read_committed:
// records of aborted transactions are archived as they are acquired, never
// delivered). Locks expire at each request that touches the
// share-partition (ExpireLocks before every acquisition and
// acknowledgement), not by a timer.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "broker/api/handler.h"
#include "broker/api/share_state.h"
#include "broker/base/kafka_error.h"
#include "broker/share/share_registry.h"
#include "broker/share/share_session.h"
#include "protocol/codec.h"

namespace headrace::broker {

// A requested topic partition resolved to its log partition here; `error`
// is TOPIC_AUTHORIZATION_FAILED (no READ on the topic), UNKNOWN_TOPIC_ID,
// UNKNOWN_TOPIC_OR_PARTITION or NOT_LEADER_OR_FOLLOWER (`partition` null).
struct ShareTarget {
  Uuid topic_id;
  int32_t index = 0;
  std::string topic;  // the name, when known
  std::shared_ptr<Partition> partition;
  KafkaError error = KafkaError::kNone;
};
ShareTarget ResolveShareTarget(BrokerContext& ctx, const Request& req, const Uuid& topic_id,
                               int32_t index);

// Why a ShareFetch or ShareAcknowledge is refused whole before its
// partitions are looked at: GROUP_AUTHORIZATION_FAILED without READ on the
// group, INVALID_REQUEST for an empty group or member id,
// SHARE_SESSION_NOT_FOUND where share groups are not served; kNone to go on.
struct ShareRefusal {
  KafkaError error = KafkaError::kNone;
  std::optional<std::string> message;
};
ShareRefusal CheckShareMember(const BrokerContext& ctx, const Request& req,
                              const std::string& group, const std::string& member);
// Answers `req` with `resp` (a ShareFetch or ShareAcknowledge response)
// carrying `no` as its top-level error and message.
template <typename Resp>
void ReplyRefusal(const Request& req, Resp resp, ShareRefusal no) {
  resp.error_code = Code(no.error);
  resp.error_message = std::move(no.message);
  req.Reply(resp);
}
// A share session's refusal as the request's error code (kNone for kOk).
KafkaError ShareSessionError(share::SessionOutcome outcome);

// The share-partition settings of `group`: its group configs
// (share.record.lock.duration.ms, share.delivery.count.limit,
// share.partition.max.record.locks), else the broker's group.share.* keys.
share::SharePartitionConfig SharePartitionConfigOf(const BrokerContext& ctx,
                                                   const std::string& group);

// One acknowledgement batch as both requests carry it.
struct AckBatch {
  int64_t first = 0;
  int64_t last = 0;
  std::span<const int8_t> types;
};

// Applies `batches` of `member` to the share-partition of (group, target)
// in order and returns the first failure: INVALID_RECORD_STATE (an offset
// not acquired by the member under a live lock, or no share-partition),
// INVALID_REQUEST (a malformed batch), or the target's own error. Batches
// before a failing one stay applied; the failing one changes nothing.
// When any applied, the share-partition's state is written to its share
// coordinator (api/share_state.h): the answer must wait for what is added
// to `*waits`, or is the write's error (KAFKA_STORAGE_ERROR,
// COORDINATOR_NOT_AVAILABLE, REQUEST_TIMED_OUT, fenced). A share-partition
// loaded under another leadership of this broker holds no acquisitions
// any more: INVALID_RECORD_STATE.
KafkaError ApplyAcknowledgements(BrokerContext& ctx, const std::string& group,
                                 const std::string& member, const ShareTarget& target,
                                 const std::vector<AckBatch>& batches, ShareWaits* waits);

// What one acquisition produced for a partition.
struct ShareRead {
  KafkaError error = KafkaError::kNone;
  std::vector<share::AcquiredRange> acquired;  // sent, by first offset
  std::vector<FileSlice> slices;               // the batches holding them, in log order
  int64_t bytes = 0;
  // Where acquisition stopped: the high watermark, or the last stable
  // offset for read_committed (a long poll waits for it to move past).
  Watermark bound = Watermark::kHighWatermark;
  int64_t bound_offset = -1;
  uint64_t state_version = 0;  // the partition's, before the read (for a long poll)
  // The share-partition was created here and its start stored: the
  // answer waits for this (api/share_state.h).
  ShareStatePersist created;
  // Still being read from its share coordinator: nothing acquired yet.
  bool loading = false;
};

// Acquires for `member` up to `max_records` records of (group, target) below
// the high watermark, or the last stable offset for a read_committed group
// (creating the share-partition where share.auto.offset.reset says if
// new), reading the group's settings once, and reads the log's batches
// holding them, spending `*budget` bytes (at least one batch per acquired
// range, so acquired records are always sent). Acquired offsets the log no longer holds are archived as
// gaps and not sent. `revalidate`: a member opened a share session with
// this partition: an idle share-partition is read again from its store
// (EnsureSharePartition).
ShareRead AcquireAndRead(BrokerContext& ctx, const std::string& group, const std::string& member,
                         const ShareTarget& target, int32_t max_records, int64_t* budget,
                         bool revalidate);

// The last offset of the last record batch in `slices` (batch headers read
// with pread), or -1 when a header cannot be read.
int64_t LastOffsetIn(const std::vector<FileSlice>& slices);

}  // namespace headrace::broker
