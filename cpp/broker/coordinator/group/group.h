// One classic consumer group's in-memory state: members, generation, the
// rebalance in progress, committed offsets, transactional offsets pending
// per producer. Plain data; GroupCoordinator
// (group_coordinator.h) runs the state machine on it under its mutex.
//
// States (Kafka's classic protocol):
//   Empty               no members (offsets may still be stored)
//   PreparingRebalance  waiting for members to (re)send JoinGroup
//   CompletingRebalance joined; waiting for the leader's SyncGroup
//   Stable              assignment handed out; members heartbeat
//   Dead                deleted (never stored in the coordinator's map)
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "broker/coordinator/group/consumer_group.h"
#include "broker/coordinator/group/share_group.h"
#include "broker/base/kafka_error.h"

namespace headrace::broker::group {

enum class GroupState { kEmpty, kPreparingRebalance, kCompletingRebalance, kStable, kDead };

// "Empty", "PreparingRebalance", ... as Kafka's ListGroups/DescribeGroups say.
const char* GroupStateName(GroupState s);

// A protocol a member supports: assignor name and its subscription bytes.
struct Protocol {
  std::string name;
  std::string metadata;
  bool operator==(const Protocol&) const = default;
};

struct JoinedMember {
  std::string member_id;
  std::optional<std::string> instance_id;
  std::string metadata;  // for the chosen protocol
};

struct JoinResult {
  KafkaError error = KafkaError::kNone;
  int32_t generation = -1;
  std::string protocol_type;
  std::optional<std::string> protocol_name;
  std::string leader;
  std::string member_id;
  bool skip_assignment = false;
  std::vector<JoinedMember> members;  // filled for the leader only
};
using JoinCallback = std::function<void(JoinResult)>;

struct SyncResult {
  KafkaError error = KafkaError::kNone;
  std::string protocol_type;
  std::optional<std::string> protocol_name;
  std::string assignment;
};
using SyncCallback = std::function<void(SyncResult)>;

struct Member {
  std::string member_id;
  std::optional<std::string> instance_id;
  std::string client_id;
  std::string client_host;
  int32_t session_timeout_ms = 0;
  int32_t rebalance_timeout_ms = 0;
  std::string protocol_type;
  std::vector<Protocol> protocols;  // in the member's order of preference
  std::string assignment;
  JoinCallback awaiting_join;  // set while its JoinGroup is parked
  SyncCallback awaiting_sync;  // set while its SyncGroup is parked
  int64_t session_deadline_ms = 0;

  // The metadata this member sent for `protocol` ("" if it does not support it).
  const std::string& MetadataFor(const std::optional<std::string>& protocol) const;
  bool Supports(const std::string& protocol) const;
};

struct CommittedOffset {
  int64_t offset = -1;
  int32_t leader_epoch = -1;
  std::optional<std::string> metadata;
  int64_t commit_time_ms = 0;
  // In memory only: the order in which this offset's record was applied
  // (appended, or read at replay). A transaction's offset replaces a
  // committed one at commit only if it was recorded later (as Kafka).
  int64_t log_order = 0;
};

// The same offset, leader epoch, metadata and commit time (log_order aside).
bool SameCommit(const CommittedOffset& a, const CommittedOffset& b);

using TopicPartitionKey = std::pair<std::string, int32_t>;

struct Group {
  std::string id;
  GroupState state = GroupState::kEmpty;
  std::string protocol_type;             // of the current members ("" = none yet)
  std::optional<std::string> protocol;   // chosen at the last completed join
  int32_t generation = 0;
  std::string leader;                    // member id, "" when none
  std::map<std::string, Member> members;             // by member id
  std::map<std::string, std::string> static_members;  // instance id -> member id
  std::map<std::string, int64_t> pending_members;     // KIP-394 ids -> expiry ms
  int64_t rebalance_deadline_ms = 0;     // PreparingRebalance: complete by then
  int64_t initial_delay_until_ms = 0;    // first rebalance of an empty group
  int64_t state_time_ms = 0;             // when the state last changed
  std::map<TopicPartitionKey, CommittedOffset> offsets;
  // Transactional offsets (TxnOffsetCommit) awaiting their transaction's
  // end, by producer id; invisible to OffsetFetch. group_txn_offsets.cc.
  struct PendingTxn {
    int16_t producer_epoch = -1;  // the highest seen; older epochs are fenced
    std::map<TopicPartitionKey, CommittedOffset> offsets;
  };
  std::map<int64_t, PendingTxn> pending_txn_offsets;
  // KIP-848: a group of the "consumer" protocol (ConsumerGroupHeartbeat).
  // Its classic fields stay unused (protocol_type "consumer", no classic
  // members) and `state` is kEmpty without members, else kStable, so that
  // deletion and offset retention treat both kinds alike.
  bool is_consumer = false;
  ConsumerGroup consumer;
  // KIP-932: a share group (ShareGroupHeartbeat, share_group_coordinator.cc),
  // never of the other kinds. Its membership lives in memory only (members
  // join again after the coordinator moves); its classic fields stay unused.
  std::optional<ShareGroup> share;

  bool Is(GroupState s) const { return state == s; }
  // "classic", "consumer" or "share" (ListGroups v5 types).
  const char* TypeName() const {
    return share ? "share" : is_consumer ? "consumer" : "classic";
  }
  // The state as ListGroups names it for this group's type.
  const char* StateName() const {
    if (share) return share->StateName();
    return is_consumer ? ConsumerGroupStateName(consumer.State()) : GroupStateName(state);
  }
  Member* FindMember(const std::string& member_id);
  // Whether some producer's transaction holds a pending offset for `tp`.
  bool HasPendingTxnOffset(const TopicPartitionKey& tp) const;
  // Nothing worth keeping: no members, offsets, pending offsets or protocol.
  bool Unused() const {
    return members.empty() && offsets.empty() && pending_txn_offsets.empty() &&
           protocol_type.empty() && !is_consumer && !share;
  }
  // The protocol chosen by vote: among protocols every member supports, each
  // member votes for its most preferred one. nullopt if none is common.
  std::optional<std::string> SelectProtocol() const;
  // True if a member with `protocol_type` and `protocols` may join: the group
  // has no members, or the type matches and some protocol is common to all.
  bool AcceptsProtocols(const std::string& protocol_type,
                        const std::vector<Protocol>& protocols) const;
  // Topics the members subscribe to, parsed from "consumer" subscriptions of
  // the chosen protocol (ConsumerProtocolSubscription: int16 version, then
  // an array of topic names).
  std::vector<std::string> SubscribedTopics() const;
};

}  // namespace headrace::broker::group
