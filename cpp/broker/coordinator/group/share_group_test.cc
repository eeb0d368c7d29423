#include "broker/coordinator/group/share_group.h"

#include <gtest/gtest.h>

namespace headrace::broker::group {
namespace {

ShareHeartbeat Join(const std::string& id, std::vector<std::string> topics) {
  ShareHeartbeat hb;
  hb.member_id = id;
  hb.member_epoch = 0;
  hb.subscribed_topics = std::move(topics);
  return hb;
}

ShareHeartbeat Beat(const std::string& id, int32_t epoch) {
  ShareHeartbeat hb;
  hb.member_id = id;
  hb.member_epoch = epoch;
  return hb;
}

std::string NoId() { return "generated"; }

TEST(ShareAssignorTest, FewerMembersThanPartitionsSpreadsThePartitions) {
  auto a = AssignShare({{"a", {"t"}}, {"b", {"t"}}}, {{"t", 5}});
  EXPECT_EQ(a["a"], (SharePartitions{{"t", {0, 2, 4}}}));
  EXPECT_EQ(a["b"], (SharePartitions{{"t", {1, 3}}}));
}

TEST(ShareAssignorTest, MoreMembersThanPartitionsShareThem) {
  auto a = AssignShare({{"a", {"t"}}, {"b", {"t"}}, {"c", {"t"}}, {"d", {"t", "u"}}},
                       {{"t", 2}, {"u", 1}, {"unsubscribed", 3}});
  EXPECT_EQ(a["a"], (SharePartitions{{"t", {0}}}));
  EXPECT_EQ(a["b"], (SharePartitions{{"t", {1}}}));
  EXPECT_EQ(a["c"], (SharePartitions{{"t", {0}}}));
  EXPECT_EQ(a["d"], (SharePartitions{{"t", {1}}, {"u", {0}}}));
  EXPECT_EQ(a.size(), 4u);
}

TEST(ShareGroupTest, AJoiningMemberGetsEveryPartitionAndTheGroupEpoch) {
  ShareGroup g(ShareGroupConfig{});
  ShareHeartbeatResult r = g.Heartbeat(Join("m1", {"t"}), {{"t", 3}}, 0, NoId);
  ASSERT_EQ(r.error, KafkaError::kNone) << r.message;
  EXPECT_EQ(r.member_id, "m1");
  EXPECT_EQ(r.member_epoch, 1);
  EXPECT_EQ(r.heartbeat_interval_ms, 5000);
  ASSERT_TRUE(r.assignment);
  EXPECT_EQ(*r.assignment, (SharePartitions{{"t", {0, 1, 2}}}));
  EXPECT_STREQ(g.StateName(), "Stable");
  // Nothing changed: no assignment in the answer, same epoch.
  r = g.Heartbeat(Beat("m1", 1), {{"t", 3}}, 10, NoId);
  EXPECT_EQ(r.member_epoch, 1);
  EXPECT_FALSE(r.assignment);
  EXPECT_TRUE(g.Assigned("m1", "t", 2));
}

TEST(ShareGroupTest, ASecondMemberSplitsTheTopicAndTheFirstLearnsAtItsNextBeat) {
  ShareGroup g(ShareGroupConfig{});
  g.Heartbeat(Join("m1", {"t"}), {{"t", 4}}, 0, NoId);
  ShareHeartbeatResult r2 = g.Heartbeat(Join("m2", {"t"}), {{"t", 4}}, 1, NoId);
  EXPECT_EQ(r2.member_epoch, 2);
  EXPECT_EQ(*r2.assignment, (SharePartitions{{"t", {1, 3}}}));
  ShareHeartbeatResult r1 = g.Heartbeat(Beat("m1", 1), {{"t", 4}}, 2, NoId);
  EXPECT_EQ(r1.member_epoch, 2);  // no revocation step: straight to the group epoch
  EXPECT_EQ(*r1.assignment, (SharePartitions{{"t", {0, 2}}}));
  EXPECT_FALSE(g.Assigned("m1", "t", 1));
}

TEST(ShareGroupTest, EpochsAndMembershipAreChecked) {
  ShareGroup g(ShareGroupConfig{});
  g.Heartbeat(Join("m1", {"t"}), {{"t", 1}}, 0, NoId);
  EXPECT_EQ(g.Heartbeat(Beat("m1", 7), {{"t", 1}}, 1, NoId).error, KafkaError::kFencedMemberEpoch);
  EXPECT_EQ(g.Heartbeat(Beat("nobody", 1), {{"t", 1}}, 1, NoId).error, KafkaError::kUnknownMemberId);
  EXPECT_EQ(g.Heartbeat(Beat("m1", -2), {{"t", 1}}, 1, NoId).error, KafkaError::kInvalidRequest);
  ShareHeartbeat no_subscription = Beat("m2", 0);
  EXPECT_EQ(g.Heartbeat(no_subscription, {{"t", 1}}, 1, NoId).error, KafkaError::kInvalidRequest);
  ShareHeartbeatResult v0 = g.Heartbeat(Join("", {"t"}), {{"t", 1}}, 1, NoId);
  EXPECT_EQ(v0.member_id, "generated");
}

TEST(ShareGroupTest, TheGroupSizeIsBounded) {
  ShareGroupConfig c;
  c.max_size = 2;
  ShareGroup g(c);
  EXPECT_EQ(g.Heartbeat(Join("a", {"t"}), {}, 0, NoId).error, KafkaError::kNone);
  EXPECT_EQ(g.Heartbeat(Join("b", {"t"}), {}, 0, NoId).error, KafkaError::kNone);
  EXPECT_EQ(g.Heartbeat(Join("c", {"t"}), {}, 0, NoId).error, KafkaError::kGroupMaxSizeReached);
  EXPECT_EQ(g.members().size(), 2u);
}

TEST(ShareGroupTest, LeavingAndExpiringMembersGiveTheirPartitionsBack) {
  ShareGroupConfig c;
  c.session_timeout_ms = 100;
  ShareGroup g(c);
  g.Heartbeat(Join("a", {"t"}), {{"t", 2}}, 0, NoId);
  g.Heartbeat(Join("b", {"t"}), {{"t", 2}}, 0, NoId);
  g.Heartbeat(Join("c", {"t"}), {{"t", 2}}, 50, NoId);
  ShareHeartbeatResult left = g.Heartbeat(Beat("c", 3), {{"t", 2}}, 60, NoId);
  ASSERT_EQ(left.error, KafkaError::kNone);
  left = g.Heartbeat(Beat("c", -1), {{"t", 2}}, 60, NoId);
  EXPECT_EQ(left.member_epoch, -1);
  EXPECT_EQ(g.group_epoch(), 4);
  EXPECT_EQ(g.ExpireSessions(99, {{"t", 2}}), std::vector<std::string>{});
  g.Heartbeat(Beat("b", 2), {{"t", 2}}, 99, NoId);  // b stays alive
  EXPECT_EQ(g.ExpireSessions(100, {{"t", 2}}), std::vector<std::string>{"a"});
  ShareHeartbeatResult b = g.Heartbeat(Beat("b", 4), {{"t", 2}}, 101, NoId);
  EXPECT_EQ(b.member_epoch, 5);
  EXPECT_EQ(*b.assignment, (SharePartitions{{"t", {0, 1}}}));
}

TEST(ShareGroupTest, NewPartitionsAndSubscriptionChangesMoveTheEpoch) {
  ShareGroup g(ShareGroupConfig{});
  g.Heartbeat(Join("a", {"t"}), {{"t", 1}}, 0, NoId);
  ShareHeartbeatResult r = g.Heartbeat(Beat("a", 1), {{"t", 3}}, 1, NoId);  // t grew
  EXPECT_EQ(r.member_epoch, 2);
  EXPECT_EQ(*r.assignment, (SharePartitions{{"t", {0, 1, 2}}}));
  ShareHeartbeat resub = Beat("a", 2);
  resub.subscribed_topics = std::vector<std::string>{"u", "t", "u"};
  r = g.Heartbeat(resub, {{"t", 3}, {"u", 1}}, 2, NoId);
  EXPECT_EQ(r.member_epoch, 3);
  EXPECT_EQ(*r.assignment, (SharePartitions{{"t", {0, 1, 2}}, {"u", {0}}}));
  EXPECT_EQ(g.members().at("a").subscribed_topics, (std::vector<std::string>{"t", "u"}));
  // An unrelated topic appearing changes nothing.
  r = g.Heartbeat(Beat("a", 3), {{"t", 3}, {"u", 1}, {"other", 9}}, 3, NoId);
  EXPECT_EQ(r.member_epoch, 3);
  EXPECT_FALSE(r.assignment);
}

}  // namespace
}  // namespace headrace::broker::group
