// KIP-932 share groups through the group coordinator (a fake clock, no
// timer thread): join, assignment, a second member, leave, expiry at the
// session deadline, describe, and coexistence with the other group kinds.
#include <gtest/gtest.h>

#include "broker/coordinator/group/group_test_fixture.h"

namespace headrace::broker::group {
namespace {

class ShareGroupCoordinatorTest : public GroupCoordinatorTest {
 protected:
  ShareHeartbeatResult Beat(const std::string& group, const std::string& member, int32_t epoch,
                            std::optional<std::vector<std::string>> topics = std::nullopt) {
    ShareHeartbeat hb;
    hb.member_id = member;
    hb.member_epoch = epoch;
    hb.subscribed_topics = std::move(topics);
    hb.client_id = "share-client";
    return c_->ShareHeartbeat(group, hb, topics_);
  }
  TopicSizes topics_ = {{"orders", 4}, {"other", 1}};
};

TEST_F(ShareGroupCoordinatorTest, MembersJoinShareTheTopicAndLeave) {
  ShareHeartbeatResult a = Beat("sg", "member-a", 0, std::vector<std::string>{"orders"});
  ASSERT_EQ(a.error, KafkaError::kNone) << a.message;
  EXPECT_EQ(a.member_id, "member-a");
  EXPECT_EQ(a.member_epoch, 1);
  EXPECT_EQ(a.heartbeat_interval_ms, 5000);
  ASSERT_TRUE(a.assignment.has_value());
  EXPECT_EQ(*a.assignment, (SharePartitions{{"orders", {0, 1, 2, 3}}}));

  ShareHeartbeatResult b = Beat("sg", "member-b", 0, std::vector<std::string>{"orders"});
  ASSERT_EQ(b.error, KafkaError::kNone) << b.message;
  EXPECT_EQ(b.member_epoch, 2);
  ASSERT_TRUE(b.assignment.has_value());
  // a learns its half at its next heartbeat, with the new epoch.
  ShareHeartbeatResult a2 = Beat("sg", "member-a", 1);
  ASSERT_EQ(a2.error, KafkaError::kNone);
  EXPECT_EQ(a2.member_epoch, 2);
  ASSERT_TRUE(a2.assignment.has_value());
  EXPECT_EQ(a2.assignment->at("orders").size() + b.assignment->at("orders").size(), 4u);
  EXPECT_TRUE(c_->ShareAssigned("sg", "member-a", "orders", *a2.assignment->at("orders").begin()));
  EXPECT_FALSE(c_->ShareAssigned("sg", "member-a", "orders", *b.assignment->at("orders").begin()));
  EXPECT_FALSE(c_->ShareAssigned("sg", "nobody", "orders", 0));

  auto listed = c_->ListGroups({});
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].type, "share");
  EXPECT_EQ(listed[0].state, "Stable");
  EXPECT_EQ(c_->DeleteGroup("sg"), KafkaError::kNonEmptyGroup);

  ShareGroupDescription d = c_->DescribeShareGroup("sg");
  ASSERT_EQ(d.error, KafkaError::kNone);
  ASSERT_TRUE(d.group.has_value());
  EXPECT_EQ(d.group->group_epoch(), 2);
  EXPECT_EQ(d.group->members().size(), 2u);

  EXPECT_EQ(Beat("sg", "member-a", -1).error, KafkaError::kNone);
  EXPECT_EQ(Beat("sg", "member-b", -1).error, KafkaError::kNone);
  EXPECT_EQ(c_->ListGroups({})[0].state, "Empty");
  EXPECT_EQ(c_->DeleteGroup("sg"), KafkaError::kNone);
  EXPECT_EQ(c_->DescribeShareGroup("sg").error, KafkaError::kGroupIdNotFound);
}

TEST_F(ShareGroupCoordinatorTest, GroupConfigsSetTheGroupsHeartbeatAndSessionTimeout) {
  group_configs_["sg"] = {{"share.heartbeat.interval.ms", "6000"},
                          {"share.session.timeout.ms", "50000"}};
  ShareHeartbeatResult a = Beat("sg", "a", 0, std::vector<std::string>{"orders"});
  ASSERT_EQ(a.error, KafkaError::kNone);
  EXPECT_EQ(a.heartbeat_interval_ms, 6000);
  EXPECT_EQ(Beat("other", "x", 0, std::vector<std::string>{"orders"}).heartbeat_interval_ms, 5000);
  now_ += 49999;
  c_->Tick();
  EXPECT_EQ(c_->DescribeShareGroup("sg").group->members().size(), 1u);  // 45 s passed
  now_ += 1;
  c_->Tick();
  EXPECT_TRUE(c_->DescribeShareGroup("sg").group->members().empty());
}

TEST_F(ShareGroupCoordinatorTest, ASilentMemberLeavesAtItsSessionDeadline) {
  ASSERT_EQ(Beat("sg", "a", 0, std::vector<std::string>{"orders"}).error, KafkaError::kNone);
  ASSERT_EQ(Beat("sg", "b", 0, std::vector<std::string>{"orders"}).error, KafkaError::kNone);
  now_ += 44999;
  ASSERT_EQ(Beat("sg", "b", 2).error, KafkaError::kNone);
  c_->Tick();
  EXPECT_EQ(c_->DescribeShareGroup("sg").group->members().size(), 2u);
  now_ += 1;  // a's 45 s since its join
  c_->Tick();
  ShareGroupDescription d = c_->DescribeShareGroup("sg");
  ASSERT_EQ(d.group->members().size(), 1u);
  EXPECT_EQ(d.group->members().begin()->first, "b");
  EXPECT_EQ(Beat("sg", "a", 1).error, KafkaError::kUnknownMemberId);
  ShareHeartbeatResult b = Beat("sg", "b", 2);
  ASSERT_EQ(b.error, KafkaError::kNone);
  EXPECT_EQ(b.member_epoch, 3);
  ASSERT_TRUE(b.assignment.has_value());
  EXPECT_EQ(*b.assignment, (SharePartitions{{"orders", {0, 1, 2, 3}}}));
}

TEST_F(ShareGroupCoordinatorTest, GroupKindsDoNotMix) {
  ASSERT_EQ(Beat("sg", "a", 0, std::vector<std::string>{"orders"}).error, KafkaError::kNone);
  // A classic member may not join a share group's id, nor a KIP-848 one.
  std::optional<JoinResult> joined = Join([&] {
    JoinRequest r = Req("");
    r.group_id = "sg";
    return r;
  }());
  ASSERT_TRUE(joined.has_value());
  EXPECT_EQ(joined->error, KafkaError::kInconsistentGroupProtocol);
  ConsumerHeartbeatRequest chb;
  chb.group_id = "sg";
  chb.member_epoch = 0;
  chb.rebalance_timeout_ms = 1000;
  chb.subscribed_topic_names = std::vector<std::string>{"orders"};
  chb.owned.emplace();
  auto lookup = [](const std::string&) -> std::optional<TopicInfo> { return std::nullopt; };
  EXPECT_EQ(c_->ConsumerHeartbeat(chb, lookup).error, KafkaError::kGroupIdNotFound);
  // A share heartbeat to a classic group's id.
  ASSERT_TRUE(Join(Req("")).has_value());  // creates "g" (MEMBER_ID_REQUIRED)
  ShareHeartbeatResult r = Beat("g", "x", 0, std::vector<std::string>{"orders"});
  EXPECT_EQ(r.error, KafkaError::kGroupIdNotFound);
  EXPECT_EQ(r.message, "Group g is not a share group.");
  EXPECT_EQ(c_->DescribeShareGroup("g").error, KafkaError::kGroupIdNotFound);
  // Bad requests.
  EXPECT_EQ(Beat("", "x", 0, std::vector<std::string>{"orders"}).error,
            KafkaError::kInvalidRequest);
  EXPECT_EQ(Beat("new", "x", 3).error, KafkaError::kUnknownMemberId);
}

}  // namespace
}  // namespace headrace::broker::group
