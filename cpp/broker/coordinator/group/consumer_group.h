// A KIP-848 consumer group's state (the "consumer" group protocol,
// ConsumerGroupHeartbeat): plain data plus the pure parts of the state
// machine — the group's state name and one member's reconciliation towards
// its target assignment. GroupCoordinator (consumer_group_coordinator.cc)
// drives it under its mutex; docs/consumer-groups.md describes it.
//
// Epochs: the group epoch advances whenever what the assignment depends on
// changes (a member joins, leaves or changes its subscription or assignor;
// a subscribed topic appears, disappears or gains partitions). The target
// assignment is recomputed for a group epoch and carries it as its
// assignment epoch. A member's epoch reaches the assignment epoch once the
// member has revoked every partition it owns that its target no longer
// holds; a partition is handed to its new owner only once no other member
// holds it (assigned or pending revocation).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/uuid.h"

namespace headrace::broker::group {

// Partitions by topic name.
using TopicPartitions = std::map<std::string, std::set<int32_t>>;

// Kafka's MemberState byte values (ConsumerGroupCurrentMemberAssignment).
enum class ConsumerMemberState : int8_t {
  kUnrevokedPartitions = 0,   // must revoke partitions before its epoch moves on
  kUnreleasedPartitions = 1,  // at the new epoch, waiting for partitions others hold
  kStable = 2,                // holds its whole target at the assignment epoch
};
const char* ConsumerMemberStateName(ConsumerMemberState s);

struct ConsumerMember {
  std::string member_id;
  std::optional<std::string> instance_id;  // static membership
  std::optional<std::string> rack_id;
  std::string client_id;
  std::string client_host;
  std::vector<std::string> subscribed_topics;  // sorted, unique
  // ConsumerGroupHeartbeat v1: topics whose whole name matches this
  // (ECMAScript syntax, std::regex; Kafka uses RE2J) are subscribed too.
  std::optional<std::string> subscribed_regex;
  std::optional<std::string> server_assignor;  // the member's preference
  int32_t rebalance_timeout_ms = 0;
  // The current assignment (ConsumerGroupCurrentMemberAssignment).
  int32_t member_epoch = 0;
  int32_t previous_member_epoch = 0;
  ConsumerMemberState state = ConsumerMemberState::kStable;
  TopicPartitions assigned;            // owned and usable
  TopicPartitions pending_revocation;  // the member must give these up
  // In memory only.
  int64_t session_deadline_ms = 0;
  int64_t revocation_deadline_ms = 0;  // while kUnrevokedPartitions; 0 = none
  bool has_metadata = false;           // replay: a member record was seen
};

// The topics a group subscribes to, as the metadata stood when the target
// assignment was last computed (ConsumerGroupPartitionMetadata).
struct SubscribedTopic {
  Uuid id;
  int32_t partitions = 0;
  bool operator==(const SubscribedTopic&) const = default;
};

enum class ConsumerGroupStateKind { kEmpty, kAssigning, kReconciling, kStable };
// "Empty", "Assigning", "Reconciling", "Stable" (Kafka's ConsumerGroupState).
const char* ConsumerGroupStateName(ConsumerGroupStateKind s);

struct ConsumerGroup {
  int32_t group_epoch = 0;
  int32_t assignment_epoch = 0;
  std::map<std::string, SubscribedTopic> topics;  // by name
  std::map<std::string, ConsumerMember> members;  // by member id
  std::map<std::string, TopicPartitions> target;  // member id -> target assignment
  std::string assignor;                           // used for the current target

  ConsumerGroupStateKind State() const;
  ConsumerMember* FindMember(const std::string& id);
  // The member id holding `instance_id`, or nullptr.
  const ConsumerMember* FindStatic(const std::string& instance_id) const;
  // Every topic name some member subscribes to by name.
  std::set<std::string> SubscribedTopicNames() const;
  // Every regex some member subscribes with.
  std::set<std::string> SubscribedRegexes() const;
  // Whether some member other than `except` holds `topic`/`partition`
  // (assigned or pending revocation).
  bool HeldByOther(const std::string& except, const std::string& topic, int32_t partition) const;
};

// Moves `m` towards `target` (the group's target for it, at `target_epoch`),
// as Kafka's CurrentAssignmentBuilder:
// - kUnrevokedPartitions: once `owned` (what the member reports owning;
//   nullopt = not reported) holds none of pending_revocation, those are
//   released and the member continues below; otherwise nothing changes.
// - partitions assigned but not in the target become pending_revocation:
//   the member keeps its epoch and enters kUnrevokedPartitions;
// - otherwise its epoch becomes target_epoch and it gets every target
//   partition that `held_by_other` says no other member holds; the rest
//   wait (kUnreleasedPartitions) until released, then kStable.
// Returns whether the member's assignment, epoch or state changed.
bool ReconcileMember(ConsumerMember& m, int32_t target_epoch, const TopicPartitions& target,
                     const std::optional<TopicPartitions>& owned,
                     const std::function<bool(const std::string&, int32_t)>& held_by_other);

}  // namespace headrace::broker::group
