// The server-side assignors of KIP-848 consumer groups, under Kafka's names:
//   uniform  balanced and sticky: every member subscribed to a topic may get
//            its partitions; member partition counts differ by at most one
//            among members that could take each other's partitions, and a
//            partition stays with its previous target owner unless it must
//            move for balance.
//   range    per topic, the subscribed members in order (instance id, else
//            member id) get consecutive ranges: n/m each, the first n%m one
//            more (Kafka's RangeAssignor semantics, so co-partitioned topics
//            line up).
// Both are deterministic: the same input gives the same output.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "broker/coordinator/group/consumer_group.h"

namespace headrace::broker::group {

struct AssignorMember {
  std::string member_id;
  std::optional<std::string> instance_id;
  std::vector<std::string> subscribed_topics;
  TopicPartitions previous_target;  // stickiness (uniform)
};

// topic name -> partition count.
using AssignorTopics = std::map<std::string, int32_t>;

// member id -> its target (every member present, possibly empty).
std::map<std::string, TopicPartitions> AssignUniform(const std::vector<AssignorMember>& members,
                                                     const AssignorTopics& topics);
std::map<std::string, TopicPartitions> AssignRange(const std::vector<AssignorMember>& members,
                                                   const AssignorTopics& topics);

// "uniform" / "range" for Kafka's short names and class names
// (org.apache.kafka.coordinator.group.assignor.UniformAssignor, ...);
// nullopt for anything else.
std::optional<std::string> AssignorShortName(const std::string& name);
// Runs the assignor `name` (a short name).
std::map<std::string, TopicPartitions> RunAssignor(const std::string& name,
                                                   const std::vector<AssignorMember>& members,
                                                   const AssignorTopics& topics);

}  // namespace headrace::broker::group
