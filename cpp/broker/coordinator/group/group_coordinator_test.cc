// The classic group state machine, driven with a fake clock and Tick().
#include "broker/coordinator/group/group_coordinator.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "broker/coordinator/group/group_test_fixture.h"

namespace headrace::broker::group {
namespace {

namespace fs = std::filesystem;

TEST_F(GroupCoordinatorTest, NewMemberGetsMemberIdRequiredThenJoinsAsLeader) {
  std::optional<JoinResult> r;
  std::string id = JoinNewMember(&r);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->error, KafkaError::kNone);
  EXPECT_EQ(r->generation, 1);
  EXPECT_EQ(r->leader, id);
  EXPECT_EQ(r->protocol_name, "range");
  ASSERT_EQ(r->members.size(), 1u);
  EXPECT_EQ(Sync(id, 1, {{id, "A"}}).assignment, "A");
  EXPECT_EQ(c_->Heartbeat("g", id, std::nullopt, 1), KafkaError::kNone);
  EXPECT_EQ(c_->Describe("g").state, GroupState::kStable);
}

TEST_F(GroupCoordinatorTest, SecondMemberTriggersRebalanceAndFollowerWaitsForLeaderSync) {
  std::optional<JoinResult> r1, r2, r1b;
  std::string a = JoinNewMember(&r1);
  Sync(a, 1, {{a, "all"}});
  std::string b = JoinNewMember(&r2);
  EXPECT_FALSE(r2.has_value());  // waits for a to rejoin
  EXPECT_EQ(c_->Heartbeat("g", a, std::nullopt, 1), KafkaError::kRebalanceInProgress);
  Join(Req(a), &r1b);
  ASSERT_TRUE(r1b && r2);
  EXPECT_EQ(r2->generation, 2);
  EXPECT_EQ(r1b->leader, a);
  EXPECT_EQ(r1b->members.size(), 2u);
  EXPECT_TRUE(r2->members.empty());
  std::optional<SyncResult> follower;
  EXPECT_EQ(Sync(b, 2, {}, &follower).assignment, "PARKED");
  EXPECT_EQ(Sync(a, 2, {{a, "x"}, {b, "y"}}).assignment, "x");
  ASSERT_TRUE(follower.has_value());
  EXPECT_EQ(follower->assignment, "y");
  EXPECT_EQ(c_->Heartbeat("g", b, std::nullopt, 1), KafkaError::kIllegalGeneration);
  EXPECT_EQ(c_->Heartbeat("g", "nobody", std::nullopt, 2), KafkaError::kUnknownMemberId);
}

TEST_F(GroupCoordinatorTest, SessionExpiryRemovesMemberAndRebalances) {
  std::optional<JoinResult> r1, r2, r1b;
  std::string a = JoinNewMember(&r1);
  Sync(a, 1, {{a, "all"}});
  std::string b = JoinNewMember(&r2);
  Join(Req(a), &r1b);
  Sync(a, 2, {{a, "x"}, {b, "y"}});
  Sync(b, 2);
  now_ += 600;
  EXPECT_EQ(c_->Heartbeat("g", a, std::nullopt, 2), KafkaError::kNone);
  now_ += 600;  // b silent for 1200 ms > 1000 ms session
  c_->Tick();
  EXPECT_EQ(c_->Heartbeat("g", b, std::nullopt, 2), KafkaError::kUnknownMemberId);
  EXPECT_EQ(c_->Heartbeat("g", a, std::nullopt, 2), KafkaError::kRebalanceInProgress);
  std::optional<JoinResult> r3;
  Join(Req(a), &r3);
  ASSERT_TRUE(r3.has_value());
  EXPECT_EQ(r3->generation, 3);
  EXPECT_EQ(r3->members.size(), 1u);
}

TEST_F(GroupCoordinatorTest, RebalanceTimeoutDropsMembersThatDoNotRejoin) {
  std::optional<JoinResult> r1, r2;
  std::string a = JoinNewMember(&r1);
  Sync(a, 1, {{a, "all"}});
  std::string b = JoinNewMember(&r2);
  now_ += 500;
  EXPECT_EQ(c_->Heartbeat("g", a, std::nullopt, 1), KafkaError::kRebalanceInProgress);
  now_ += 1600;  // past the 2000 ms rebalance timeout
  c_->Tick();
  ASSERT_TRUE(r2.has_value());
  EXPECT_EQ(r2->leader, b);
  EXPECT_EQ(r2->members.size(), 1u);
}

TEST_F(GroupCoordinatorTest, LeaveEmptiesGroupAndUnknownMemberIsReported) {
  std::optional<JoinResult> r1;
  std::string a = JoinNewMember(&r1);
  Sync(a, 1, {{a, "all"}});
  auto [ge, per] = c_->Leave("g", {{a, std::nullopt}, {"ghost", std::nullopt}});
  EXPECT_EQ(ge, KafkaError::kNone);
  EXPECT_EQ(per[0], KafkaError::kNone);
  EXPECT_EQ(per[1], KafkaError::kUnknownMemberId);
  EXPECT_EQ(c_->Describe("g").state, GroupState::kEmpty);
  EXPECT_EQ(c_->DeleteGroup("g"), KafkaError::kNone);
  EXPECT_EQ(c_->DeleteGroup("g"), KafkaError::kGroupIdNotFound);
}

TEST_F(GroupCoordinatorTest, StaticMemberRejoinsWithoutRebalance) {
  std::optional<JoinResult> r1;
  Join(Req("", "inst-1"), &r1);  // static members skip MEMBER_ID_REQUIRED
  ASSERT_TRUE(r1.has_value());
  std::string a = r1->member_id;
  Sync(a, 1, {{a, "mine"}});
  // Restarted process: same instance id, no member id, same metadata.
  std::optional<JoinResult> again;
  Join(Req("", "inst-1"), &again);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->error, KafkaError::kNone);
  EXPECT_EQ(again->generation, 1);  // no rebalance
  EXPECT_NE(again->member_id, a);
  EXPECT_EQ(c_->Describe("g").state, GroupState::kStable);
  EXPECT_EQ(Sync(again->member_id, 1).assignment, "mine");
  // The old incarnation is fenced.
  EXPECT_EQ(c_->Heartbeat("g", a, "inst-1", 1), KafkaError::kFencedInstanceId);
}

TEST_F(GroupCoordinatorTest, BadJoinsGetTheirErrors) {
  JoinRequest r = Req("");
  r.group_id = "";
  EXPECT_EQ(Join(r)->error, KafkaError::kInvalidGroupId);
  r = Req("");
  r.session_timeout_ms = 10;
  EXPECT_EQ(Join(r)->error, KafkaError::kInvalidSessionTimeout);
  EXPECT_EQ(Join(Req("unknown-id"))->error, KafkaError::kUnknownMemberId);
  std::optional<JoinResult> r1;
  JoinNewMember(&r1);
  JoinRequest other = Req("");
  other.protocols = {{"roundrobin", ""}};
  EXPECT_EQ(Join(other)->error, KafkaError::kInconsistentGroupProtocol);
}

TEST_F(GroupCoordinatorTest, CommitRulesAndOffsetsSurviveReopen) {
  CommitRequest simple;
  simple.group_id = "g";
  simple.partitions = {{"t", 0, 42, 3, "meta"}, {"t", 1, 7, -1, std::nullopt}};
  auto errs = c_->Commit(simple);
  EXPECT_EQ(errs, std::vector<KafkaError>(2, KafkaError::kNone));
  simple.group_id = "";
  EXPECT_EQ(c_->Commit(simple)[0], KafkaError::kInvalidGroupId);

  std::optional<JoinResult> r1;
  std::string a = JoinNewMember(&r1);
  CommitRequest member;
  member.group_id = "g";
  member.member_id = a;
  member.generation = 1;
  member.partitions = {{"t", 0, 50, -1, ""}};
  EXPECT_EQ(c_->Commit(member)[0], KafkaError::kRebalanceInProgress);  // not synced yet
  Sync(a, 1, {{a, "x"}});
  EXPECT_EQ(c_->Commit(member)[0], KafkaError::kNone);
  member.generation = 9;
  EXPECT_EQ(c_->Commit(member)[0], KafkaError::kIllegalGeneration);
  member.generation = 1;
  member.member_id = "ghost";
  EXPECT_EQ(c_->Commit(member)[0], KafkaError::kUnknownMemberId);
  EXPECT_EQ(c_->Commit(CommitRequest{"g", "", std::nullopt, -1, {{"t", 0, 1, -1, ""}}})[0],
            KafkaError::kUnknownMemberId);  // simple commit while members are active

  Reopen();
  std::vector<FetchedOffset> got;
  EXPECT_EQ(c_->FetchOffsets("g", std::nullopt, &got), KafkaError::kNone);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].committed.offset, 50);
  EXPECT_EQ(got[1].committed.offset, 7);
  got.clear();
  c_->FetchOffsets("g", std::vector<TopicPartitionKey>{{"t", 5}}, &got);
  EXPECT_EQ(got.at(0).committed.offset, -1);
  // The reloaded member is still there (Stable) and keeps heartbeating.
  EXPECT_EQ(c_->Heartbeat("g", a, std::nullopt, 1), KafkaError::kNone);
  EXPECT_EQ(c_->DeleteGroup("g"), KafkaError::kNonEmptyGroup);
}

TEST_F(GroupCoordinatorTest, RetentionExpiresOffsetsOfEmptyGroups) {
  Reopen([](GroupConfig& c) {
    c.offsets_retention_ms = 1000;
    c.offsets_retention_check_interval_ms = 100;
  });
  c_->Commit(CommitRequest{"g", "", std::nullopt, -1, {{"t", 0, 1, -1, ""}}});
  now_ += 500;
  c_->Tick();
  EXPECT_EQ(c_->ListGroups({}).size(), 1u);
  now_ += 600;
  c_->Tick();
  EXPECT_TRUE(c_->ListGroups({}).empty());
  Reopen();
  EXPECT_TRUE(c_->ListGroups({}).empty());
}

TEST_F(GroupCoordinatorTest, CompactionKeepsTheLiveStateAndShrinksTheLog) {
  Reopen([](GroupConfig& c) {
    c.log_segment_bytes = 16384;
    c.commit_fsync = false;
  });

  std::optional<JoinResult> r1;
  std::string a = JoinNewMember(&r1);
  Sync(a, 1, {{a, "assignment-a"}});
  c_->Commit(CommitRequest{"simple", "", std::nullopt, -1, {{"t", 9, 99, -1, "x"}}});
  // 3000 commits of the same two partitions: all but the last two are garbage.
  for (int i = 1; i <= 3000; ++i) {
    CommitRequest req{"g", a, std::nullopt, 1, {{"t", 0, i, -1, ""}, {"t", 1, 2 * i, -1, ""}}};
    ASSERT_EQ(c_->Commit(req)[0], KafkaError::kNone);
    if (i % 100 == 0) c_->Tick();
  }
  // A deleted group leaves a tombstone; compaction must not resurrect it.
  ASSERT_EQ(c_->DeleteGroup("simple"), KafkaError::kNone);
  // The old records go once the flusher has fsynced the compacted copy; a
  // later tick notices.
  int64_t compacted = GroupLogBytes(dir_);
  for (int i = 0; i < 500 && compacted >= 3 * 16384; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    c_->Tick();
    compacted = GroupLogBytes(dir_);
  }
  // Uncompacted, 3000 commits take > 200 KiB; the live state is a few hundred
  // bytes, plus at most the active segment's older records.
  EXPECT_LT(compacted, 3 * 16384) << "log not compacted";

  Reopen();
  std::vector<FetchedOffset> got;
  EXPECT_EQ(c_->FetchOffsets("g", std::nullopt, &got), KafkaError::kNone);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].committed.offset, 3000);
  EXPECT_EQ(got[1].committed.offset, 6000);
  // The member and its assignment survived compaction and reopen.
  EXPECT_EQ(c_->Heartbeat("g", a, std::nullopt, 1), KafkaError::kNone);
  EXPECT_EQ(c_->Describe("g").members.at(0).assignment, "assignment-a");
  EXPECT_EQ(c_->ListGroups({}).size(), 1u);  // "simple" stays deleted
}

TEST_F(GroupCoordinatorTest, StopAnswersParkedJoins) {
  std::optional<JoinResult> r1, r2;
  std::string a = JoinNewMember(&r1);
  Sync(a, 1, {{a, "x"}});
  JoinNewMember(&r2);
  EXPECT_FALSE(r2.has_value());
  c_->Stop();
  ASSERT_TRUE(r2.has_value());
  EXPECT_EQ(r2->error, KafkaError::kCoordinatorNotAvailable);
}

}  // namespace
}  // namespace headrace::broker::group
