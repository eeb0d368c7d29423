// CollectIsrChanges over leaders and followers: what each proposes, once.
#include "broker/replication/isr_changes.h"

#include <gtest/gtest.h>

#include "broker/partition/partition_test_util.h"
#include "log/testing.h"

namespace headrace::broker::replication {
namespace {

std::shared_ptr<Partition> OpenPartition(const std::string& dir, const std::string& topic,
                                         int32_t broker) {
  PartitionServices services;
  services.local_broker_id = broker;
  auto p = Partition::Open(dir, TopicPartition{topic, 0}, Uuid::Random(), {}, services);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? *p : nullptr;
}

TEST(IsrChangesTest, CollectsEachLeadersProposalOnceWithItsEpoch) {
  headrace::testing::TempDir dir;
  auto a = OpenPartition(dir.path(), "a", 1);
  auto b = OpenPartition(dir.path(), "b", 1);
  auto follower = OpenPartition(dir.path(), "c", 1);
  ASSERT_TRUE(a->BecomeLeader(LeaderEpoch(4), {1, 2, 3}, {1, 2, 3}).ok());
  ASSERT_TRUE(b->BecomeLeader(LeaderEpoch(1), {1, 2}, {1, 2}).ok());
  ASSERT_TRUE(follower->BecomeFollower(LeaderEpoch(1), 2, {1, 2}).ok());
  std::string batch = broker::testing::ProducerBatch(3);
  ASSERT_TRUE(a->AppendAsLeader(broker::testing::MutableBytes(batch), 1).ok());
  const int64_t now = Partition::SteadyNowMs();
  a->UpdateFollowerState(2, Offset(3), Offset(3), now);  // 3 never fetched
  b->UpdateFollowerState(2, Offset(0), Offset(0), now);  // b is idle and caught up
  const int64_t lag = 1000;
  auto changes = CollectIsrChanges({a, b, follower}, now + 5 * lag, lag);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0], (IsrChange{"a", 0, 4, {1, 2}}));
  EXPECT_TRUE(CollectIsrChanges({a, b, follower}, now + 6 * lag, lag).empty());  // once
  ASSERT_TRUE(a->UpdateIsr({1, 2}).ok());
  a->UpdateFollowerState(3, Offset(3), Offset(3), now + 7 * lag);  // caught up again
  changes = CollectIsrChanges({a, b, follower}, now + 7 * lag, lag);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0], (IsrChange{"a", 0, 4, {1, 2, 3}}));
  for (auto& p : {a, b, follower}) EXPECT_TRUE(p->Close().ok());
}

}  // namespace
}  // namespace headrace::broker::replication
