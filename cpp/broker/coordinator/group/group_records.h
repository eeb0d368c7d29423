// The coordinator's record format: what one key/value pair in its log means.
// docs/consumer-groups.md ("On-disk format") describes the same bytes.
//
// All integers are big-endian. "string" = int16 length + bytes (-1 = null);
// "bytes" = int32 length + bytes.
//
// Key:   int16 kind, then
//   kind 1 (committed offset):  string group, string topic, int32 partition
//   kind 2 (group metadata):    string group
//   kind 3 (pending transactional offset):
//                               string group, int64 producer id, string topic,
//                               int32 partition
//   kind 4 (transaction end):   int64 producer id
//   kinds 13-18: a KIP-848 consumer group's records, Kafka's key types 3-8
//   plus 10 (consumer_group_records.h): string group, and for kinds 15, 17
//   and 18 (per member) string member id
// Value: null = tombstone (the key was deleted), otherwise int16 version (0):
//   kind 1: int64 offset, int32 leader epoch, string metadata (nullable),
//           int64 commit time ms
//   kind 3: int16 producer epoch, then as kind 1
//   kind 4: int8 result (1 = commit, 0 = abort)
//   kind 2: string protocol type, int32 generation, string protocol (nullable),
//           string leader, int64 state time ms, int32 member count, then per
//           member: string member id, string instance id (nullable),
//           string client id, string client host, int32 session timeout ms,
//           int32 rebalance timeout ms, bytes metadata (for the chosen
//           protocol), bytes assignment
// The newest record of a key wins on replay, except kind 4, which is an
// event: it commits (into kind 1 state) or drops every kind 3 offset of its
// producer recorded before it, in every group.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "headrace/status.h"

namespace headrace::broker::group {

enum class RecordKind : int16_t {
  kOffset = 1,
  kGroup = 2,
  kPendingTxnOffset = 3,
  kTxnEnd = 4,
  // KIP-848 consumer groups: Kafka's __consumer_offsets key version + 10.
  kConsumerGroupMetadata = 13,                 // group epoch
  kConsumerGroupPartitionMetadata = 14,        // subscribed topics' metadata
  kConsumerGroupMemberMetadata = 15,           // one member's subscription
  kConsumerGroupTargetAssignmentMetadata = 16, // target assignment epoch
  kConsumerGroupTargetAssignmentMember = 17,   // one member's target partitions
  kConsumerGroupCurrentMemberAssignment = 18,  // one member's epoch, state, partitions
};

// Kinds whose key names a member after the group.
inline bool IsConsumerGroupMemberKind(RecordKind k) {
  return k == RecordKind::kConsumerGroupMemberMetadata ||
         k == RecordKind::kConsumerGroupTargetAssignmentMember ||
         k == RecordKind::kConsumerGroupCurrentMemberAssignment;
}

struct RecordKey {
  RecordKind kind = RecordKind::kOffset;
  std::string group;         // all but kTxnEnd
  std::string topic;         // kOffset, kPendingTxnOffset
  int32_t partition = 0;     // kOffset, kPendingTxnOffset
  int64_t producer_id = -1;  // kPendingTxnOffset, kTxnEnd
  std::string member_id{};   // IsConsumerGroupMemberKind
};

struct OffsetValue {
  int64_t offset = -1;
  int32_t leader_epoch = -1;
  std::optional<std::string> metadata;
  int64_t commit_time_ms = 0;
};

struct PendingTxnOffsetValue {
  int16_t producer_epoch = -1;
  OffsetValue offset;
};

// A transaction's end at the group coordinator. Records written before the
// epoch was kept have neither producer_epoch nor end_time_ms (-1, 0).
// `fence_only`: a compaction copy's restatement of a past end; replayed, it
// sets the producer's fence epoch and ends nothing (the offsets pending at
// that point belong to a later transaction). Encoded as result 2.
struct TxnEndValue {
  bool commit = false;
  int16_t producer_epoch = -1;  // the marker's epoch
  int64_t end_time_ms = 0;
  bool fence_only = false;
};

struct StoredMember {
  std::string member_id;
  std::optional<std::string> instance_id;
  std::string client_id;
  std::string client_host;
  int32_t session_timeout_ms = 0;
  int32_t rebalance_timeout_ms = 0;
  std::string metadata;
  std::string assignment;
};

struct GroupValue {
  std::string protocol_type;
  int32_t generation = 0;
  std::optional<std::string> protocol;
  std::string leader;
  int64_t state_time_ms = 0;
  std::vector<StoredMember> members;
};

std::string EncodeKey(const RecordKey& key);
std::string EncodeOffsetValue(const OffsetValue& v);
std::string EncodeGroupValue(const GroupValue& v);
std::string EncodePendingTxnOffsetValue(const PendingTxnOffsetValue& v);
std::string EncodeTxnEndValue(const TxnEndValue& v);

// Errors: Corruption for truncated or unknown layouts.
Result<RecordKey> DecodeKey(std::string_view bytes);
Result<OffsetValue> DecodeOffsetValue(std::string_view bytes);
Result<GroupValue> DecodeGroupValue(std::string_view bytes);
Result<PendingTxnOffsetValue> DecodePendingTxnOffsetValue(std::string_view bytes);
Result<TxnEndValue> DecodeTxnEndValue(std::string_view bytes);

}  // namespace headrace::broker::group
