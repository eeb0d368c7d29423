// KIP-848 consumer groups: the reconciliation state machine alone, then the
// coordinator's ConsumerGroupHeartbeat with a fake clock (join, revocation
// before assignment, leave, expiry at the exact deadline, static members,
// metadata changes, commits with member epochs, coexistence with classic
// groups, restart from the group log).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "broker/coordinator/group/consumer_group.h"
#include "broker/coordinator/group/consumer_group_records.h"
#include "broker/coordinator/group/group_test_fixture.h"

namespace headrace::broker::group {
namespace {

// ---- ReconcileMember alone ----

auto NobodyElse = [](const std::string&, int32_t) { return false; };

TEST(ReconcileMember, NewMemberGetsFreePartitionsAndTheEpoch) {
  ConsumerMember m;
  EXPECT_TRUE(ReconcileMember(m, 3, {{"a", {0, 1}}}, TopicPartitions{}, NobodyElse));
  EXPECT_EQ(m.member_epoch, 3);
  EXPECT_EQ(m.state, ConsumerMemberState::kStable);
  EXPECT_EQ(m.assigned, (TopicPartitions{{"a", {0, 1}}}));
}

TEST(ReconcileMember, RevokesBeforeTheEpochMoves) {
  ConsumerMember m;
  m.member_epoch = 3;
  m.assigned = {{"a", {0, 1, 2}}};
  EXPECT_TRUE(ReconcileMember(m, 4, {{"a", {0, 1}}}, std::nullopt, NobodyElse));
  EXPECT_EQ(m.state, ConsumerMemberState::kUnrevokedPartitions);
  EXPECT_EQ(m.member_epoch, 3);
  EXPECT_EQ(m.assigned, (TopicPartitions{{"a", {0, 1}}}));
  EXPECT_EQ(m.pending_revocation, (TopicPartitions{{"a", {2}}}));
  // Still reporting partition 2: nothing moves.
  EXPECT_FALSE(ReconcileMember(m, 4, {{"a", {0, 1}}}, TopicPartitions{{"a", {0, 1, 2}}}, NobodyElse));
  EXPECT_EQ(m.member_epoch, 3);
  // Revoked: the epoch moves and the member is stable.
  EXPECT_TRUE(ReconcileMember(m, 4, {{"a", {0, 1}}}, TopicPartitions{{"a", {0, 1}}}, NobodyElse));
  EXPECT_EQ(m.member_epoch, 4);
  EXPECT_EQ(m.previous_member_epoch, 3);
  EXPECT_EQ(m.state, ConsumerMemberState::kStable);
  EXPECT_TRUE(m.pending_revocation.empty());
}

TEST(ReconcileMember, WaitsForPartitionsAnotherMemberStillHolds) {
  ConsumerMember m;
  auto held = [](const std::string&, int32_t p) { return p == 1; };
  EXPECT_TRUE(ReconcileMember(m, 2, {{"a", {0, 1}}}, TopicPartitions{}, held));
  EXPECT_EQ(m.state, ConsumerMemberState::kUnreleasedPartitions);
  EXPECT_EQ(m.member_epoch, 2);
  EXPECT_EQ(m.assigned, (TopicPartitions{{"a", {0}}}));
  EXPECT_TRUE(ReconcileMember(m, 2, {{"a", {0, 1}}}, std::nullopt, NobodyElse));
  EXPECT_EQ(m.state, ConsumerMemberState::kStable);
  EXPECT_EQ(m.assigned, (TopicPartitions{{"a", {0, 1}}}));
}

// ---- the records ----

TEST(ConsumerGroupRecords, KeysAreKafkasAndTheLiveRecordsReplayToTheSameGroup) {
  ConsumerGroup cg;
  cg.group_epoch = 7;
  cg.assignment_epoch = 6;
  cg.topics["t"] = SubscribedTopic{Uuid::Random(), 3};
  ConsumerMember& m = cg.members["m1"];
  m.member_id = "m1";
  m.instance_id = "i1";
  m.client_id = "c";
  m.client_host = "/127.0.0.1";
  m.subscribed_topics = {"t"};
  m.subscribed_regex = "t.*";
  m.server_assignor = "range";
  m.rebalance_timeout_ms = 3000;
  m.member_epoch = 5;
  m.previous_member_epoch = 4;
  m.state = ConsumerMemberState::kUnrevokedPartitions;
  m.assigned = {{"t", {0}}};
  m.pending_revocation = {{"t", {2}}};
  cg.target["m1"] = {{"t", {0, 1}}};
  std::vector<GroupLog::Entry> live;
  AppendConsumerGroupLiveEntries("g", cg, &live);
  ASSERT_EQ(live.size(), 6u);
  ConsumerGroup back;
  std::set<RecordKind> kinds;
  for (const GroupLog::Entry& e : live) {
    auto key = DecodeKey(e.key);
    ASSERT_TRUE(key.ok()) << key.status().ToString();
    EXPECT_EQ(key->group, "g");
    EXPECT_EQ(key->member_id, IsConsumerGroupMemberKind(key->kind) ? "m1" : "");
    kinds.insert(key->kind);
    ASSERT_TRUE(ApplyConsumerGroupRecord(back, *key, e.value).ok());
  }
  EXPECT_EQ(kinds.size(), 6u);
  EXPECT_EQ(back.group_epoch, 7);
  EXPECT_EQ(back.assignment_epoch, 6);
  EXPECT_EQ(back.topics, cg.topics);
  EXPECT_EQ(back.target, cg.target);
  const ConsumerMember& b = back.members.at("m1");
  EXPECT_EQ(b.instance_id, m.instance_id);
  EXPECT_EQ(b.subscribed_topics, m.subscribed_topics);
  EXPECT_EQ(b.subscribed_regex, m.subscribed_regex);
  EXPECT_EQ(b.server_assignor, m.server_assignor);
  EXPECT_EQ(b.rebalance_timeout_ms, 3000);
  EXPECT_EQ(b.member_epoch, 5);
  EXPECT_EQ(b.previous_member_epoch, 4);
  EXPECT_EQ(b.state, ConsumerMemberState::kUnrevokedPartitions);
  EXPECT_EQ(b.assigned, m.assigned);
  EXPECT_EQ(b.pending_revocation, m.pending_revocation);
  // A member's tombstones remove it.
  std::vector<GroupLog::Entry> gone;
  AppendConsumerMemberTombstones("g", "m1", &gone);
  for (const GroupLog::Entry& e : gone) {
    auto key = DecodeKey(e.key);
    ASSERT_TRUE(key.ok());
    ASSERT_TRUE(ApplyConsumerGroupRecord(back, *key, e.value).ok());
  }
  EXPECT_TRUE(back.members.empty());
  EXPECT_TRUE(back.target.empty());
}

// ---- the coordinator ----

class ConsumerGroupTest : public GroupCoordinatorTest {
 protected:
  void SetUp() override {
    GroupCoordinatorTest::SetUp();
    topics_["t"] = TopicInfo{Uuid::Random(), 4};
    ReopenConsumer();
  }
  void ReopenConsumer(std::function<void(GroupConfig&)> more = {}) {
    Reopen([more](GroupConfig& c) {
      c.consumer_min_session_timeout_ms = 100;
      c.consumer_session_timeout_ms = 1000;
      c.consumer_min_heartbeat_interval_ms = 10;
      c.consumer_heartbeat_interval_ms = 100;
      if (more) more(c);
    });
  }
  TopicLookup Lookup() {
    return [this](const std::string& name) -> std::optional<TopicInfo> {
      auto it = topics_.find(name);
      if (it == topics_.end()) return std::nullopt;
      return it->second;
    };
  }
  ConsumerHeartbeatResult Hb(const std::string& member, int32_t epoch,
                             std::optional<IdPartitions> owned = std::nullopt,
                             std::optional<std::string> instance = std::nullopt) {
    ConsumerHeartbeatRequest r;
    r.group_id = "cg";
    r.member_id = member;
    r.member_epoch = epoch;
    r.instance_id = instance;
    if (epoch == 0) {
      r.rebalance_timeout_ms = 5000;
      r.subscribed_topic_names = std::vector<std::string>{"t"};
      if (!owned) owned = IdPartitions{};
    }
    r.owned = owned;
    r.client_id = "c";
    return c_->ConsumerHeartbeat(r, Lookup());
  }
  std::set<int32_t> Parts(const IdPartitions& a) {
    std::set<int32_t> out;
    for (const auto& [id, ps] : a) out.insert(ps.begin(), ps.end());
    return out;
  }
  IdPartitions Own(const std::set<int32_t>& ps) {
    return IdPartitions{{topics_["t"].id, std::vector<int32_t>(ps.begin(), ps.end())}};
  }
  std::map<std::string, TopicInfo> topics_;
};

TEST_F(ConsumerGroupTest, FirstMemberGetsEverything) {
  auto r = Hb("", 0);
  ASSERT_EQ(r.error, KafkaError::kNone);
  EXPECT_FALSE(r.member_id.empty());
  EXPECT_EQ(r.member_epoch, 1);
  EXPECT_EQ(r.heartbeat_interval_ms, 100);
  ASSERT_TRUE(r.assignment);
  EXPECT_EQ(Parts(*r.assignment), (std::set<int32_t>{0, 1, 2, 3}));
  auto d = c_->DescribeConsumerGroup("cg");
  EXPECT_EQ(d.state, "Stable");
  EXPECT_EQ(d.group_epoch, 1);
  EXPECT_EQ(d.assignor, "uniform");
}

TEST_F(ConsumerGroupTest, SecondMemberWaitsUntilTheFirstRevokes) {
  auto a = Hb("", 0);
  auto b = Hb("", 0);
  ASSERT_EQ(b.error, KafkaError::kNone);
  EXPECT_EQ(b.member_epoch, 2);
  // b's target partitions are still held by a: nothing usable yet.
  ASSERT_TRUE(b.assignment);
  EXPECT_TRUE(Parts(*b.assignment).empty());
  // a is told to keep only its new target (revoke the rest); epoch stays 1.
  auto a2 = Hb(a.member_id, 1, Own({0, 1, 2, 3}));
  ASSERT_EQ(a2.error, KafkaError::kNone);
  EXPECT_EQ(a2.member_epoch, 1);
  ASSERT_TRUE(a2.assignment);
  std::set<int32_t> kept = Parts(*a2.assignment);
  EXPECT_EQ(kept.size(), 2u);
  EXPECT_EQ(c_->DescribeConsumerGroup("cg").state, "Reconciling");
  // b still gets nothing while a has not revoked.
  auto b2 = Hb(b.member_id, 2, Own({}));
  EXPECT_FALSE(b2.assignment && !Parts(*b2.assignment).empty());
  // a revokes: its epoch moves to 2.
  auto a3 = Hb(a.member_id, 1, Own(kept));
  EXPECT_EQ(a3.member_epoch, 2);
  // Now b gets the released partitions, disjoint from a's.
  auto b3 = Hb(b.member_id, 2, Own({}));
  ASSERT_TRUE(b3.assignment);
  std::set<int32_t> bs = Parts(*b3.assignment);
  EXPECT_EQ(bs.size(), 2u);
  for (int32_t p : bs) EXPECT_FALSE(kept.count(p));
  EXPECT_EQ(c_->DescribeConsumerGroup("cg").state, "Stable");
}

TEST_F(ConsumerGroupTest, FencingAndErrors) {
  auto a = Hb("", 0);
  EXPECT_EQ(Hb(a.member_id, 5, Own({})).error, KafkaError::kFencedMemberEpoch);
  EXPECT_EQ(Hb("nobody", 1, Own({})).error, KafkaError::kUnknownMemberId);
  ConsumerHeartbeatRequest bad;
  bad.group_id = "cg";
  bad.member_epoch = 0;  // no rebalance timeout, no subscription
  EXPECT_EQ(c_->ConsumerHeartbeat(bad, Lookup()).error, KafkaError::kInvalidRequest);
  ConsumerHeartbeatRequest assignor;
  assignor.group_id = "cg";
  assignor.member_epoch = 0;
  assignor.rebalance_timeout_ms = 1000;
  assignor.subscribed_topic_names = std::vector<std::string>{"t"};
  assignor.owned = IdPartitions{};
  assignor.server_assignor = "roundrobin";
  EXPECT_EQ(c_->ConsumerHeartbeat(assignor, Lookup()).error, KafkaError::kUnsupportedAssignor);
  assignor.server_assignor = "range";
  auto r = c_->ConsumerHeartbeat(assignor, Lookup());
  EXPECT_EQ(r.error, KafkaError::kNone);
  EXPECT_EQ(c_->DescribeConsumerGroup("cg").assignor, "range");
}

TEST_F(ConsumerGroupTest, SessionExpiresExactlyAtTheDeadlineAndTheGroupCanBeDeleted) {
  auto a = Hb("", 0);
  now_ += 999;
  EXPECT_EQ(c_->DeleteGroup("cg"), KafkaError::kNonEmptyGroup);
  now_ += 1;  // exactly group.consumer.session.timeout.ms after the heartbeat
  EXPECT_EQ(c_->DeleteGroup("cg"), KafkaError::kNone);
  EXPECT_EQ(c_->DescribeConsumerGroup("cg").error, KafkaError::kGroupIdNotFound);
}

TEST_F(ConsumerGroupTest, GroupConfigsSetTheGroupsHeartbeatAndSessionTimeout) {
  group_configs_["cg"] = {{"consumer.heartbeat.interval.ms", "200"},
                          {"consumer.session.timeout.ms", "3000"}};
  auto a = Hb("", 0);
  ASSERT_EQ(a.error, KafkaError::kNone);
  EXPECT_EQ(a.heartbeat_interval_ms, 200);
  now_ += 2999;
  EXPECT_EQ(c_->DeleteGroup("cg"), KafkaError::kNonEmptyGroup);  // the broker's 1000 passed
  now_ += 1;
  EXPECT_EQ(c_->DeleteGroup("cg"), KafkaError::kNone);
}

TEST_F(ConsumerGroupTest, ClassicSessionExpiresExactlyAtTheDeadline) {
  std::optional<JoinResult> joined;
  std::string id = JoinNewMember(&joined);
  ASSERT_TRUE(joined);
  Sync(id, joined->generation, {{id, "x"}});
  EXPECT_EQ(c_->Heartbeat("g", id, std::nullopt, joined->generation), KafkaError::kNone);
  now_ += 999;  // session timeout 1000 (fixture)
  EXPECT_EQ(c_->DeleteGroup("g"), KafkaError::kNonEmptyGroup);
  now_ += 1;
  EXPECT_EQ(c_->DeleteGroup("g"), KafkaError::kNone);
}

TEST_F(ConsumerGroupTest, ExpiredMemberPartitionsGoToTheOthers) {
  auto a = Hb("", 0);
  auto b = Hb("", 0);
  auto a2 = Hb(a.member_id, 1, Own({0, 1, 2, 3}));
  Hb(a.member_id, 1, Own(Parts(*a2.assignment)));
  Hb(b.member_id, 2, Own({}));
  now_ += 600;
  auto a3 = Hb(a.member_id, 2, Own(Parts(*a2.assignment)));  // a stays alive, b does not
  now_ += 400;  // b's deadline
  auto a4 = Hb(a.member_id, 2, Own(Parts(*a2.assignment)));
  ASSERT_EQ(a4.error, KafkaError::kNone);
  EXPECT_EQ(a4.member_epoch, 3);
  ASSERT_TRUE(a4.assignment);
  EXPECT_EQ(Parts(*a4.assignment), (std::set<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(Hb(b.member_id, 2, Own({})).error, KafkaError::kUnknownMemberId);
}

TEST_F(ConsumerGroupTest, NewPartitionsMakeANewAssignment) {
  auto a = Hb("", 0);
  topics_["t"].partitions = 6;
  auto a2 = Hb(a.member_id, 1, Own({0, 1, 2, 3}));
  EXPECT_EQ(a2.member_epoch, 2);
  ASSERT_TRUE(a2.assignment);
  EXPECT_EQ(Parts(*a2.assignment).size(), 6u);
}

TEST_F(ConsumerGroupTest, RegexSubscriptionFollowsNewTopics) {
  topics_["other"] = TopicInfo{Uuid::Random(), 2};
  TopicNames names = [this] {
    std::vector<std::string> out;
    for (const auto& [n, t] : topics_) out.push_back(n);
    return out;
  };
  ConsumerHeartbeatRequest r;
  r.group_id = "cg";
  r.member_epoch = 0;
  r.rebalance_timeout_ms = 1000;
  r.subscribed_topic_regex = "t.*";
  r.owned = IdPartitions{};
  auto a = c_->ConsumerHeartbeat(r, Lookup(), names);
  ASSERT_EQ(a.error, KafkaError::kNone);
  ASSERT_TRUE(a.assignment);
  ASSERT_EQ(a.assignment->size(), 1u);  // "t" only
  EXPECT_EQ(a.assignment->front().first, topics_["t"].id);
  topics_["t2"] = TopicInfo{Uuid::Random(), 3};
  ConsumerHeartbeatRequest next;
  next.group_id = "cg";
  next.member_id = a.member_id;
  next.member_epoch = a.member_epoch;
  auto b = c_->ConsumerHeartbeat(next, Lookup(), names);
  ASSERT_EQ(b.error, KafkaError::kNone);
  EXPECT_EQ(b.member_epoch, 2);
  ASSERT_TRUE(b.assignment);
  EXPECT_EQ(b.assignment->size(), 2u);
  r.subscribed_topic_regex = "(";
  EXPECT_EQ(c_->ConsumerHeartbeat(r, Lookup(), names).error, KafkaError::kInvalidRegularExpression);
}

TEST_F(ConsumerGroupTest, StaticMemberRejoinKeepsItsAssignment) {
  auto a = Hb("", 0, std::nullopt, "inst-a");
  auto b = Hb("", 0, std::nullopt, "inst-b");
  auto a2 = Hb(a.member_id, 1, Own({0, 1, 2, 3}), "inst-a");
  Hb(a.member_id, 1, Own(Parts(*a2.assignment)), "inst-a");
  auto b2 = Hb(b.member_id, 2, Own({}), "inst-b");
  std::set<int32_t> bs = Parts(*b2.assignment);
  // b leaves for now (-2) and a new incarnation of inst-b comes back.
  EXPECT_EQ(Hb(b.member_id, -2, Own(bs), "inst-b").member_epoch, -2);
  EXPECT_EQ(Hb("", 0, std::nullopt, "inst-a").error, KafkaError::kUnreleasedInstanceId);
  auto b3 = Hb("", 0, std::nullopt, "inst-b");
  ASSERT_EQ(b3.error, KafkaError::kNone);
  EXPECT_NE(b3.member_id, b.member_id);
  EXPECT_EQ(b3.member_epoch, 2);  // no new group epoch
  ASSERT_TRUE(b3.assignment);
  EXPECT_EQ(Parts(*b3.assignment), bs);
}

TEST_F(ConsumerGroupTest, CommitAndFetchCheckTheMemberEpoch) {
  auto a = Hb("", 0);
  CommitRequest cr;
  cr.group_id = "cg";
  cr.member_id = a.member_id;
  cr.generation = 1;
  cr.partitions = {CommitPartition{"t", 0, 42, -1, std::nullopt}};
  EXPECT_EQ(c_->Commit(cr)[0], KafkaError::kNone);
  cr.generation = 0;
  EXPECT_EQ(c_->Commit(cr)[0], KafkaError::kStaleMemberEpoch);
  cr.generation = 1;
  cr.api_version = 8;
  EXPECT_EQ(c_->Commit(cr)[0], KafkaError::kUnsupportedVersion);
  cr.api_version = 9;
  cr.member_id = "x";
  EXPECT_EQ(c_->Commit(cr)[0], KafkaError::kUnknownMemberId);
  std::vector<FetchedOffset> out;
  EXPECT_EQ(c_->FetchOffsets("cg", std::nullopt, &out, false, a.member_id, 0),
            KafkaError::kStaleMemberEpoch);
  EXPECT_EQ(c_->FetchOffsets("cg", std::nullopt, &out, false, std::string("x"), 1),
            KafkaError::kUnknownMemberId);
  out.clear();
  EXPECT_EQ(c_->FetchOffsets("cg", std::nullopt, &out, false, a.member_id, 1), KafkaError::kNone);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].committed.offset, 42);
}

TEST_F(ConsumerGroupTest, CoexistsWithClassicGroups) {
  Hb("", 0);
  // A classic member cannot join the consumer group.
  JoinRequest j = Req("");
  j.group_id = "cg";
  auto jr = Join(j);
  ASSERT_TRUE(jr);
  EXPECT_EQ(jr->error, KafkaError::kInconsistentGroupProtocol);
  // A consumer member cannot join a classic group with members.
  std::optional<JoinResult> joined;
  JoinNewMember(&joined);
  ConsumerHeartbeatRequest r;
  r.group_id = "g";
  r.member_epoch = 0;
  r.rebalance_timeout_ms = 1000;
  r.subscribed_topic_names = std::vector<std::string>{"t"};
  r.owned = IdPartitions{};
  EXPECT_EQ(c_->ConsumerHeartbeat(r, Lookup()).error, KafkaError::kGroupIdNotFound);
  EXPECT_EQ(c_->DescribeConsumerGroup("g").error, KafkaError::kGroupIdNotFound);
  EXPECT_EQ(c_->Describe("cg").state, GroupState::kDead);
  auto listed = c_->ListGroups({});
  ASSERT_EQ(listed.size(), 2u);
  for (const auto& l : listed) EXPECT_EQ(l.type, l.group_id == "cg" ? "consumer" : "classic");
  EXPECT_EQ(c_->ListGroups({"reconciling", "stable"}).size(), 1u);
}

TEST_F(ConsumerGroupTest, EmptyClassicGroupIsUpgradedKeepingItsOffsets) {
  CommitRequest cr;
  cr.group_id = "cg";
  cr.partitions = {CommitPartition{"t", 1, 7, -1, std::nullopt}};
  EXPECT_EQ(c_->Commit(cr)[0], KafkaError::kNone);  // a simple consumer's Empty group
  auto a = Hb("", 0);
  ASSERT_EQ(a.error, KafkaError::kNone);
  std::vector<FetchedOffset> out;
  c_->FetchOffsets("cg", std::nullopt, &out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].committed.offset, 7);
}

TEST_F(ConsumerGroupTest, RestartKeepsEpochsAndAssignments) {
  auto a = Hb("", 0);
  auto b = Hb("", 0);
  auto a2 = Hb(a.member_id, 1, Own({0, 1, 2, 3}));
  std::set<int32_t> as = Parts(*a2.assignment);
  Hb(a.member_id, 1, Own(as));
  auto b2 = Hb(b.member_id, 2, Own({}));
  std::set<int32_t> bs = Parts(*b2.assignment);
  auto before = c_->DescribeConsumerGroup("cg");
  ReopenConsumer();
  auto after = c_->DescribeConsumerGroup("cg");
  ASSERT_EQ(after.error, KafkaError::kNone);
  EXPECT_EQ(after.group_epoch, before.group_epoch);
  EXPECT_EQ(after.assignment_epoch, before.assignment_epoch);
  ASSERT_EQ(after.members.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(after.members[i].member.member_id, before.members[i].member.member_id);
    EXPECT_EQ(after.members[i].member.member_epoch, before.members[i].member.member_epoch);
    EXPECT_EQ(after.members[i].member.assigned, before.members[i].member.assigned);
    EXPECT_EQ(after.members[i].target, before.members[i].target);
  }
  // The members carry on with their epochs.
  auto a3 = Hb(a.member_id, 2, Own(as));
  EXPECT_EQ(a3.error, KafkaError::kNone);
  EXPECT_EQ(a3.member_epoch, 2);
  EXPECT_EQ(Hb(b.member_id, 2, Own(bs)).error, KafkaError::kNone);
  // And compaction keeps the same state.
  ReopenConsumer([](GroupConfig& c) { c.log_segment_bytes = 4096; });
  auto again = c_->DescribeConsumerGroup("cg");
  EXPECT_EQ(again.group_epoch, before.group_epoch);
  EXPECT_EQ(again.members.size(), 2u);
}

TEST_F(ConsumerGroupTest, CompactionKeepsTheConsumerGroup) {
  ReopenConsumer([](GroupConfig& c) {
    c.log_segment_bytes = 16384;
    c.commit_fsync = false;
  });
  auto a = Hb("", 0, std::nullopt, "inst-a");
  auto b = Hb("", 0);
  auto a2 = Hb(a.member_id, 1, Own({0, 1, 2, 3}), "inst-a");
  Hb(a.member_id, 1, Own(Parts(*a2.assignment)), "inst-a");
  Hb(b.member_id, 2, Own({}));
  auto before = c_->DescribeConsumerGroup("cg");
  for (int i = 1; i <= 2000; ++i) {  // garbage for the compaction to drop
    CommitRequest cr;
    cr.group_id = "cg";
    cr.member_id = b.member_id;
    cr.generation = 2;
    cr.partitions = {CommitPartition{"t", 0, i, -1, std::nullopt}};
    ASSERT_EQ(c_->Commit(cr)[0], KafkaError::kNone);
    if (i % 100 == 0) c_->Tick();
  }
  int64_t compacted = GroupLogBytes(dir_);
  for (int i = 0; i < 500 && compacted >= 3 * 16384; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    c_->Tick();
    compacted = GroupLogBytes(dir_);
  }
  EXPECT_LT(compacted, 3 * 16384) << "log not compacted";
  ReopenConsumer();
  auto after = c_->DescribeConsumerGroup("cg");
  ASSERT_EQ(after.error, KafkaError::kNone);
  EXPECT_EQ(after.group_epoch, before.group_epoch);
  EXPECT_EQ(after.assignment_epoch, before.assignment_epoch);
  ASSERT_EQ(after.members.size(), before.members.size());
  for (size_t i = 0; i < after.members.size(); ++i) {
    EXPECT_EQ(after.members[i].member.member_id, before.members[i].member.member_id);
    EXPECT_EQ(after.members[i].member.instance_id, before.members[i].member.instance_id);
    EXPECT_EQ(after.members[i].member.member_epoch, before.members[i].member.member_epoch);
    EXPECT_EQ(after.members[i].member.assigned, before.members[i].member.assigned);
    EXPECT_EQ(after.members[i].target, before.members[i].target);
  }
  std::vector<FetchedOffset> out;
  c_->FetchOffsets("cg", std::nullopt, &out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].committed.offset, 2000);
}

TEST_F(ConsumerGroupTest, LeaveFreesPartitionsAndEmptyGroupCanBeDeletedAfterRestart) {
  auto a = Hb("", 0);
  EXPECT_EQ(Hb(a.member_id, -1).member_epoch, -1);
  EXPECT_EQ(c_->DescribeConsumerGroup("cg").state, "Empty");
  ReopenConsumer();
  EXPECT_EQ(c_->DescribeConsumerGroup("cg").state, "Empty");
  EXPECT_EQ(c_->DeleteGroup("cg"), KafkaError::kNone);
  ReopenConsumer();
  EXPECT_EQ(c_->DescribeConsumerGroup("cg").error, KafkaError::kGroupIdNotFound);
}

}  // namespace
}  // namespace headrace::broker::group
