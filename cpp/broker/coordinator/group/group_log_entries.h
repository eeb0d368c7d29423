// The group log records (group_records.h) that state the coordinator's
// in-memory state (group.h): one builder per record kind. Used by the
// coordinator's writes and by compaction, so both write the same bytes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "broker/coordinator/group/group.h"
#include "broker/coordinator/base/group_log.h"
#include "broker/coordinator/group/group_records.h"

namespace headrace::broker::group {

// A committed offset, or its tombstone when `c` is nullopt.
GroupLog::Entry OffsetEntry(const std::string& group, const TopicPartitionKey& tp,
                            const std::optional<CommittedOffset>& c);
// The group's metadata record (members, generation, assignments).
GroupLog::Entry GroupEntry(const Group& g);
GroupLog::Entry GroupTombstone(const std::string& group);
// A producer's pending transactional offset, or its tombstone (nullopt).
GroupLog::Entry PendingTxnOffsetEntry(const std::string& group, int64_t producer_id,
                                      int16_t producer_epoch, const TopicPartitionKey& tp,
                                      const std::optional<CommittedOffset>& c);
// The end of a producer's transaction: commit or abort its pending offsets,
// and the marker's epoch, below which the producer is fenced.
GroupLog::Entry TxnEndEntry(int64_t producer_id, const TxnEndValue& end);
// Every live record of `g` for compaction: its metadata (when it has any),
// its committed and pending offsets in the order they were recorded, so
// that a replay decides a transaction's commit as the live state did.
void AppendLiveEntries(const Group& g, std::vector<GroupLog::Entry>* out);

}  // namespace headrace::broker::group
