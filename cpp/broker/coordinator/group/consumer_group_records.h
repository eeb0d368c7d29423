// The group log records of KIP-848 consumer groups: Kafka's six consumer
// group record types, keyed as Kafka keys them (so the newest record of a
// key is that key's state and a compaction by key keeps the group), kinds
// 13-18 of group_records.h. Values (all integers big-endian, version 0
// first; "partitions" = int32 topic count, then per topic string name,
// int32 count, int32 partition...):
//   13 ConsumerGroupMetadata            key group          value int32 group epoch
//   14 ConsumerGroupPartitionMetadata   key group          value int32 n, then per
//        subscribed topic: string name, int64 id msb, int64 id lsb, int32 partitions
//   15 ConsumerGroupMemberMetadata      key group, member  value string instance id
//        (nullable), string rack (nullable), string client id, string client host,
//        int32 n + n strings (subscribed topic names), string server assignor
//        (nullable), int32 rebalance timeout ms, string subscribed topic regex
//        (nullable)
//   16 ConsumerGroupTargetAssignmentMetadata key group     value int32 assignment epoch
//   17 ConsumerGroupTargetAssignmentMember   key group, member  value partitions
//   18 ConsumerGroupCurrentMemberAssignment  key group, member  value int32 member
//        epoch, int32 previous member epoch, int8 state (ConsumerMemberState),
//        partitions assigned, partitions pending revocation
// A null value is a tombstone. Topics are named, not given by id, in 17 and
// 18 (Kafka uses ids): the ids live in 14.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "broker/coordinator/group/consumer_group.h"
#include "broker/coordinator/base/group_log.h"
#include "broker/coordinator/group/group_records.h"
#include "headrace/status.h"

namespace headrace::broker::group {

GroupLog::Entry ConsumerGroupMetadataEntry(const std::string& group, int32_t epoch);
GroupLog::Entry ConsumerGroupPartitionMetadataEntry(const std::string& group,
                                                    const std::map<std::string, SubscribedTopic>& topics);
GroupLog::Entry ConsumerGroupMemberEntry(const std::string& group, const ConsumerMember& m);
GroupLog::Entry ConsumerGroupTargetMetadataEntry(const std::string& group, int32_t epoch);
GroupLog::Entry ConsumerGroupTargetMemberEntry(const std::string& group,
                                               const std::string& member_id,
                                               const TopicPartitions& target);
GroupLog::Entry ConsumerGroupCurrentAssignmentEntry(const std::string& group,
                                                    const ConsumerMember& m);
// Tombstones of one member's three records (current assignment, target,
// metadata, in that order, as Kafka writes them).
void AppendConsumerMemberTombstones(const std::string& group, const std::string& member_id,
                                    std::vector<GroupLog::Entry>* out);
// Tombstones of every record of the group (members' first).
void AppendConsumerGroupTombstones(const std::string& group, const ConsumerGroup& cg,
                                   std::vector<GroupLog::Entry>* out);
// Every live record of the group, for compaction and tests.
void AppendConsumerGroupLiveEntries(const std::string& group, const ConsumerGroup& cg,
                                    std::vector<GroupLog::Entry>* out);

// Replays one record (kinds 13-18) into `cg`. Corruption for a bad value.
Status ApplyConsumerGroupRecord(ConsumerGroup& cg, const RecordKey& key,
                                const std::optional<std::string>& value);

}  // namespace headrace::broker::group
