// The role view (leader, replicas, ISR) answers while an append holds the
// partition's lock across a write the disk has stalled: what Metadata,
// DescribeCluster and /metrics read on a network thread.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "broker/partition/fake_log_test_util.h"
#include "broker/partition/partition.h"

namespace headrace::broker {
namespace {

using namespace std::chrono_literals;
using testing::FakeBatch;
using testing::FakeLog;

TEST(PartitionViewTest, RoleReadsAnswerWhileAnAppendIsStalledInItsWrite) {
  auto log = std::make_unique<FakeLog>();
  std::promise<void> entered, release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> hold{false};
  log->on_append = [&] {
    if (!hold.exchange(false)) return;
    entered.set_value();
    released.wait();
  };
  PartitionServices services;
  services.local_broker_id = 1;
  auto p = std::make_shared<Partition>(TopicPartition{"t", 0}, Uuid::Random(), std::move(log),
                                       TopicSettings{}, services);
  ASSERT_TRUE(p->BecomeLeader(LeaderEpoch(3), {1, 2, 3}, {1, 2}).ok());

  hold = true;
  std::thread writer([&] {
    std::string b = FakeBatch(1);
    EXPECT_TRUE(p->AppendAsLeader({reinterpret_cast<uint8_t*>(b.data()), b.size()}).ok());
  });
  entered.get_future().wait();  // the append holds the partition's lock now
  auto reads = std::async(std::launch::async, [&] {
    return std::make_tuple(p->leader_id(), p->replicas(), p->isr());
  });
  const bool answered = reads.wait_for(5s) == std::future_status::ready;
  release.set_value();
  writer.join();
  ASSERT_TRUE(answered) << "leader/replicas/ISR waited for the stalled append";
  auto [leader, replicas, isr] = reads.get();
  EXPECT_EQ(leader, 1);
  EXPECT_EQ(replicas, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(isr, (std::vector<int32_t>{1, 2}));

  // The view follows role and ISR changes.
  ASSERT_TRUE(p->UpdateIsr({1, 3}).ok());
  EXPECT_EQ(p->isr(), (std::vector<int32_t>{1, 3}));
  ASSERT_TRUE(p->BecomeFollower(LeaderEpoch(4), 2, {2, 1}).ok());
  EXPECT_EQ(p->leader_id(), 2);
  EXPECT_EQ(p->replicas(), (std::vector<int32_t>{1, 2}));  // the local broker first
  EXPECT_TRUE(p->isr().empty());
  (void)p->Close();
}

}  // namespace
}  // namespace headrace::broker
