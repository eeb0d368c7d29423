// The KIP-848 server-side assignors: uniform balance and stickiness, range
// semantics.
#include "broker/coordinator/group/consumer_assignors.h"

#include <gtest/gtest.h>

namespace headrace::broker::group {
namespace {

size_t Count(const TopicPartitions& tps) {
  size_t n = 0;
  for (const auto& [t, ps] : tps) n += ps.size();
  return n;
}

// Every partition of `topics` is assigned exactly once.
void ExpectComplete(const std::map<std::string, TopicPartitions>& a, const AssignorTopics& topics) {
  std::map<std::pair<std::string, int32_t>, int> seen;
  for (const auto& [m, tps] : a)
    for (const auto& [t, ps] : tps)
      for (int32_t p : ps) ++seen[{t, p}];
  size_t total = 0;
  for (const auto& [t, n] : topics) total += static_cast<size_t>(n);
  EXPECT_EQ(seen.size(), total);
  for (const auto& [tp, n] : seen) EXPECT_EQ(n, 1) << tp.first << "-" << tp.second;
}

AssignorMember M(std::string id, std::vector<std::string> topics, TopicPartitions prev = {}) {
  return AssignorMember{std::move(id), std::nullopt, std::move(topics), std::move(prev)};
}

TEST(UniformAssignor, BalancesHomogeneousSubscriptions) {
  AssignorTopics topics{{"a", 7}, {"b", 3}};
  std::vector<AssignorMember> ms{M("m1", {"a", "b"}), M("m2", {"a", "b"}), M("m3", {"a", "b"})};
  auto a = AssignUniform(ms, topics);
  ExpectComplete(a, topics);
  for (const auto& [id, tps] : a) {
    EXPECT_GE(Count(tps), 3u);
    EXPECT_LE(Count(tps), 4u);
  }
}

TEST(UniformAssignor, IsStickyWhenAMemberJoins) {
  AssignorTopics topics{{"a", 6}};
  std::vector<AssignorMember> two{M("m1", {"a"}), M("m2", {"a"})};
  auto first = AssignUniform(two, topics);
  ExpectComplete(first, topics);
  std::vector<AssignorMember> three{M("m1", {"a"}, first["m1"]), M("m2", {"a"}, first["m2"]),
                                    M("m3", {"a"})};
  auto second = AssignUniform(three, topics);
  ExpectComplete(second, topics);
  EXPECT_EQ(Count(second["m1"]), 2u);
  EXPECT_EQ(Count(second["m2"]), 2u);
  EXPECT_EQ(Count(second["m3"]), 2u);
  // Only the two partitions the new member needed moved.
  for (const char* id : {"m1", "m2"})
    for (int32_t p : second[id]["a"]) EXPECT_TRUE(first[id]["a"].count(p)) << id << " " << p;
}

TEST(UniformAssignor, KeepsAssignmentWhenAMemberLeavesAndOnlyMovesItsPartitions) {
  AssignorTopics topics{{"a", 6}};
  auto first = AssignUniform({M("m1", {"a"}), M("m2", {"a"}), M("m3", {"a"})}, topics);
  auto second = AssignUniform({M("m1", {"a"}, first["m1"]), M("m2", {"a"}, first["m2"])}, topics);
  ExpectComplete(second, topics);
  for (const char* id : {"m1", "m2"}) {
    EXPECT_EQ(Count(second[id]), 3u);
    for (int32_t p : first[id]["a"]) EXPECT_TRUE(second[id]["a"].count(p));
  }
}

TEST(UniformAssignor, HeterogeneousSubscriptionsOnlyGetSubscribedTopics) {
  AssignorTopics topics{{"a", 4}, {"b", 4}};
  auto a = AssignUniform({M("m1", {"a"}), M("m2", {"a", "b"}), M("m3", {"b"})}, topics);
  ExpectComplete(a, topics);
  EXPECT_FALSE(a["m1"].count("b"));
  EXPECT_FALSE(a["m3"].count("a"));
  EXPECT_EQ(Count(a["m1"]) + Count(a["m2"]) + Count(a["m3"]), 8u);
  for (const auto& [id, tps] : a) EXPECT_LE(Count(tps), 3u) << id;
}

TEST(UniformAssignor, DropsPartitionsOfUnsubscribedOrVanishedTopics) {
  AssignorTopics topics{{"a", 2}};
  TopicPartitions prev{{"a", {0, 1}}, {"gone", {0}}};
  auto a = AssignUniform({M("m1", {"a"}, prev)}, topics);
  EXPECT_EQ(a["m1"], (TopicPartitions{{"a", {0, 1}}}));
}

TEST(RangeAssignor, ConsecutiveRangesPerTopicFirstMembersGetTheRemainder) {
  AssignorTopics topics{{"a", 7}, {"b", 2}};
  auto a = AssignRange({M("m2", {"a", "b"}), M("m1", {"a", "b"}), M("m3", {"a"})}, topics);
  ExpectComplete(a, topics);
  EXPECT_EQ(a["m1"]["a"], (std::set<int32_t>{0, 1, 2}));
  EXPECT_EQ(a["m2"]["a"], (std::set<int32_t>{3, 4}));
  EXPECT_EQ(a["m3"]["a"], (std::set<int32_t>{5, 6}));
  EXPECT_EQ(a["m1"]["b"], (std::set<int32_t>{0}));
  EXPECT_EQ(a["m2"]["b"], (std::set<int32_t>{1}));
  EXPECT_FALSE(a["m3"].count("b"));
}

TEST(RangeAssignor, CoPartitionedTopicsLineUp) {
  AssignorTopics topics{{"a", 4}, {"b", 4}};
  auto a = AssignRange({M("x", {"a", "b"}), M("y", {"a", "b"})}, topics);
  for (const char* id : {"x", "y"}) EXPECT_EQ(a[id]["a"], a[id]["b"]);
}

TEST(RangeAssignor, StaticMembersOrderByInstanceId) {
  AssignorTopics topics{{"a", 4}};
  std::vector<AssignorMember> ms{M("zzz", {"a"}), M("aaa", {"a"})};
  ms[0].instance_id = "i1";  // sorts first despite its member id
  ms[1].instance_id = "i2";
  auto a = AssignRange(ms, topics);
  EXPECT_EQ(a["zzz"]["a"], (std::set<int32_t>{0, 1}));
  EXPECT_EQ(a["aaa"]["a"], (std::set<int32_t>{2, 3}));
}

TEST(Assignors, KafkaNames) {
  EXPECT_EQ(AssignorShortName("uniform"), "uniform");
  EXPECT_EQ(AssignorShortName("org.apache.kafka.coordinator.group.assignor.RangeAssignor"), "range");
  EXPECT_EQ(AssignorShortName("roundrobin"), std::nullopt);
}

}  // namespace
}  // namespace headrace::broker::group
