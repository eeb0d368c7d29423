// The share coordinator's records (KIP-932): what one key/value pair of
// __share_group_state means. The bytes are Kafka's ShareSnapshotKey /
// ShareSnapshotValue (share-coordinator/.../ShareSnapshot{Key,Value}.json,
// pinned in docs/share-groups.md "__share_group_state"):
//
//   key:   int16 0 (ShareSnapshotKey), string GroupId (int16 length),
//          uuid TopicId (16 bytes), int32 Partition
//   value: int16 0, then flexible: uint16 SnapshotEpoch, int32 StateEpoch,
//          int32 LeaderEpoch, int64 StartOffset, compact array of
//          {int64 FirstOffset, int64 LastOffset, int8 DeliveryState
//          (0 available, 2 acknowledged, 4 archived), int16 DeliveryCount,
//          tagged fields}, tagged fields
//   null value: the share-partition's state was deleted.
//
// headrace writes only snapshots: every record is a whole share-partition's
// state, so the newest record of a key is the state, and compaction keeps
// it. Kafka's delta records (ShareUpdateKey, key version 1) are never
// written here and are refused on read (Corruption).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "broker/share/share_partition.h"
#include "broker/share/share_registry.h"
#include "headrace/status.h"

namespace headrace::broker::share {

// One share-partition's durable state.
struct ShareState {
  int32_t state_epoch = 0;    // bumped when the state is reset (offsets altered)
  int32_t leader_epoch = -1;  // the share-partition leader's epoch that wrote it
  int32_t snapshot_epoch = 0; // counts the snapshots written
  int64_t start_offset = -1;  // the SPSO
  std::vector<StateBatch> batches;  // sorted, not overlapping, none below start_offset
  bool operator==(const ShareState&) const = default;
};

std::string EncodeShareStateKey(const SharePartitionKey& key);
std::string EncodeShareStateValue(const ShareState& state);

Result<SharePartitionKey> DecodeShareStateKey(std::string_view bytes);
Result<ShareState> DecodeShareStateValue(std::string_view bytes);

// `update`'s batches laid over `base` (an update wins where they overlap),
// cut below `start_offset`, sorted, with touching batches of one state and
// count joined: what WriteShareGroupState does with a write's batches.
std::vector<StateBatch> MergeStateBatches(const std::vector<StateBatch>& base,
                                          const std::vector<StateBatch>& update,
                                          int64_t start_offset);

// Kafka's coordinator key of a share-partition: "group:topicId:partition"
// (topic id in base64), hashed to a partition of __share_group_state.
std::string ShareCoordinatorKey(const SharePartitionKey& key);

}  // namespace headrace::broker::share
