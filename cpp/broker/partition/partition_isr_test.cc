// ISR tracking on the leader (Partition::ProposeIsr: shrink after
// replica.lag.time.max.ms, expand once caught up, one proposal per change),
// the follower-side full truncation (TruncateFullyAndStartAt) and the
// epoch fence of a follower append. Real Log in a temporary directory.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "broker/base/kafka_error.h"
#include "broker/partition/partition.h"
#include "broker/partition/partition_test_util.h"
#include "log/testing.h"

namespace headrace::broker {
namespace {

using testing::LeaderWrittenBatch;
using testing::MutableBytes;
using testing::ProducerBatch;

constexpr int64_t kLag = 30000;  // replica.lag.time.max.ms

class PartitionIsrTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (p_) (void)p_->Close();
  }
  void Open(int32_t broker, bool fsync_commit = false) {
    if (p_) {
      ASSERT_TRUE(p_->Close().ok());
    }
    PartitionServices services;
    services.local_broker_id = broker;
    services.commit_requires_fsync = fsync_commit;
    auto opened = Partition::Open(dir_.path(), TopicPartition{"t", 0}, Uuid::Random(), {}, services);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    p_ = *opened;
  }
  void Lead(int records) {
    std::string b = ProducerBatch(records);
    ASSERT_TRUE(p_->AppendAsLeader(MutableBytes(b), 1).ok());
  }
  headrace::testing::TempDir dir_;
  std::shared_ptr<Partition> p_;
};

TEST_F(PartitionIsrTest, ShrinksAFollowerNotCaughtUpWithinTheLagOnceAndKeepsAnIdleOne) {
  Open(1);
  const int64_t t0 = Partition::SteadyNowMs();
  ASSERT_TRUE(p_->BecomeLeader(LeaderEpoch(1), {1, 2, 3}, {1, 2, 3}).ok());
  Lead(10);
  p_->UpdateFollowerState(2, Offset(10), Offset(10), t0 + 100);  // caught up
  p_->UpdateFollowerState(3, Offset(5), Offset(5), t0 + 100);    // behind
  EXPECT_EQ(p_->ProposeIsr(t0 + kLag / 2, kLag), std::nullopt);
  // Broker 3 was last caught up when the epoch started; broker 2 has the
  // whole log, so however long ago it fetched it stays in sync.
  auto proposed = p_->ProposeIsr(t0 + 1000 + kLag * 2, kLag);
  ASSERT_TRUE(proposed.has_value());
  EXPECT_EQ(*proposed, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(p_->isr(), (std::vector<int32_t>{1, 2, 3}));  // proposed, not applied
  EXPECT_EQ(p_->ProposeIsr(t0 + 2000 + kLag * 2, kLag), std::nullopt);  // not twice
  ASSERT_TRUE(p_->UpdateIsr({1, 2}).ok());  // the control plane applied it
  EXPECT_EQ(p_->ProposeIsr(t0 + 3000 + kLag * 2, kLag), std::nullopt);  // 3 is still behind
}

// A leader that did not run for a while (SIGSTOP) saw no fetches then:
// the gap between two checks is not its followers' lag.
TEST_F(PartitionIsrTest, ALeaderStallDoesNotCountAsFollowerLag) {
  constexpr int64_t kShortLag = 500;
  Open(1);
  ASSERT_TRUE(p_->BecomeLeader(LeaderEpoch(1), {1, 2}, {1, 2}).ok());
  Lead(10);
  const int64_t t0 = Partition::SteadyNowMs();
  p_->UpdateFollowerState(2, Offset(10), Offset(10), t0);  // caught up
  Lead(5);                                                  // 2 is behind now
  EXPECT_EQ(p_->ProposeIsr(t0 + 100, kShortLag), std::nullopt);
  std::this_thread::sleep_for(std::chrono::milliseconds(Partition::kLeaderStallMs + 300));
  // Past the lag time since 2 was caught up, but the leader did not run.
  const int64_t resumed = Partition::SteadyNowMs();
  EXPECT_EQ(p_->ProposeIsr(resumed, kShortLag), std::nullopt);
  // Checked every ~100 ms from then on: 2, still behind, leaves after the lag.
  std::optional<std::vector<int32_t>> proposed;
  for (int i = 0; i < 20 && !proposed; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    proposed = p_->ProposeIsr(Partition::SteadyNowMs(), kShortLag);
  }
  ASSERT_TRUE(proposed.has_value());
  EXPECT_EQ(*proposed, (std::vector<int32_t>{1}));
  EXPECT_GE(Partition::SteadyNowMs() - resumed, kShortLag - 300);
}

TEST_F(PartitionIsrTest, AFetchAtThePreviousLeaderEndCountsAsCaughtUpThen) {
  Open(1);
  const int64_t t0 = Partition::SteadyNowMs();
  ASSERT_TRUE(p_->BecomeLeader(LeaderEpoch(1), {1, 2}, {1, 2}).ok());
  Lead(10);
  p_->UpdateFollowerState(2, Offset(10), Offset(10), t0 + kLag);  // caught up at t0 + lag
  Lead(5);
  // Behind the new end but at the end the leader had at its last fetch: it
  // was caught up as of that fetch, so not lagging yet at t0 + 1.5 lag.
  p_->UpdateFollowerState(2, Offset(10), Offset(10), t0 + kLag + kLag / 2);
  EXPECT_EQ(p_->ProposeIsr(t0 + kLag + kLag / 2, kLag), std::nullopt);
  // Stuck below the end since: out after the lag.
  p_->UpdateFollowerState(2, Offset(12), Offset(12), t0 + 2 * kLag + 10);
  auto proposed = p_->ProposeIsr(t0 + 2 * kLag + 10, kLag);
  ASSERT_TRUE(proposed.has_value());
  EXPECT_EQ(*proposed, (std::vector<int32_t>{1}));
}

TEST_F(PartitionIsrTest, AReplicaThatNeverFetchedDoesNotJoinTheIsrOfAnEmptyLog) {
  Open(1);
  ASSERT_TRUE(p_->BecomeLeader(LeaderEpoch(1), {1, 2}, {1}).ok());  // HW 0, LEO 0
  const int64_t now = Partition::SteadyNowMs();
  EXPECT_EQ(p_->ProposeIsr(now, kLag), std::nullopt);  // 2 is not known to be caught up
  p_->UpdateFollowerState(2, Offset(0), Offset(0), now);
  EXPECT_EQ(p_->ProposeIsr(now, kLag), (std::vector<int32_t>{1, 2}));
}

TEST_F(PartitionIsrTest, AReplicaThatStoppedFetchingIsNotAddedBackFromStaleOffsets) {
  Open(1);
  const int64_t t0 = Partition::SteadyNowMs();
  ASSERT_TRUE(p_->BecomeLeader(LeaderEpoch(1), {1, 2}, {1}).ok());
  Lead(10);
  p_->UpdateFollowerState(2, Offset(10), Offset(10), t0);  // caught up, then it died
  EXPECT_EQ(p_->ProposeIsr(t0 + kLag + 1, kLag), std::nullopt);
  p_->UpdateFollowerState(2, Offset(10), Offset(10), t0 + kLag + 2);  // it fetches again
  EXPECT_EQ(p_->ProposeIsr(t0 + kLag + 2, kLag), (std::vector<int32_t>{1, 2}));
}

TEST_F(PartitionIsrTest, AReplicaDroppedFromTheIsrRejoinsOnlyAfterAFetchMadeSince) {
  Open(1);
  const int64_t t0 = Partition::SteadyNowMs();
  ASSERT_TRUE(p_->BecomeLeader(LeaderEpoch(1), {1, 2}, {1, 2}).ok());
  Lead(10);
  p_->UpdateFollowerState(2, Offset(10), Offset(10), t0);  // caught up
  // The controller drops 2 (its log directory failed; it stops fetching):
  // its last fetch, recent and at the log end, must not bring it back.
  ASSERT_TRUE(p_->UpdateIsr({1}).ok());
  EXPECT_EQ(p_->ProposeIsr(t0 + 1, kLag), std::nullopt);
  EXPECT_EQ(p_->ProposeIsr(t0 + Partition::kIsrReproposeMs + 2, kLag), std::nullopt);
  p_->UpdateFollowerState(2, Offset(10), Offset(10), t0 + 3);  // it fetches again
  EXPECT_EQ(p_->ProposeIsr(t0 + 3, kLag), (std::vector<int32_t>{1, 2}));
}

TEST_F(PartitionIsrTest, ExpandsOnlyPastTheHighWatermarkAndTheEpochStart) {
  Open(1, /*fsync_commit=*/true);
  Lead(10);  // not fsynced: the HW stays 0
  ASSERT_TRUE(p_->BecomeLeader(LeaderEpoch(1), {1, 2}, {1}).ok());  // epoch 1 starts at 10
  EXPECT_EQ(p_->high_watermark(), Offset(0));
  const int64_t now = Partition::SteadyNowMs();
  p_->UpdateFollowerState(2, Offset(5), Offset(5), now);
  EXPECT_EQ(p_->ProposeIsr(now, kLag), std::nullopt);  // past the HW, not the epoch start
  p_->UpdateFollowerState(2, Offset(10), Offset(10), now);
  auto proposed = p_->ProposeIsr(now, kLag);
  ASSERT_TRUE(proposed.has_value());
  EXPECT_EQ(*proposed, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(p_->ProposeIsr(now, kLag), std::nullopt);  // once
  // Not applied (the control plane refused it): proposed again later.
  EXPECT_EQ(p_->ProposeIsr(now + Partition::kIsrReproposeMs - 1, kLag), std::nullopt);
  EXPECT_EQ(p_->ProposeIsr(now + Partition::kIsrReproposeMs, kLag),
            (std::vector<int32_t>{1, 2}));
  ASSERT_TRUE(p_->UpdateIsr({1, 2}).ok());
  EXPECT_EQ(p_->ProposeIsr(now, kLag), std::nullopt);
  EXPECT_EQ(p_->isr(), (std::vector<int32_t>{1, 2}));
}

TEST_F(PartitionIsrTest, ANewEpochAllowsTheSameProposalAgain) {
  Open(1);
  ASSERT_TRUE(p_->BecomeLeader(LeaderEpoch(1), {1, 2}, {1}).ok());
  const int64_t now = Partition::SteadyNowMs();
  p_->UpdateFollowerState(2, Offset(0), Offset(0), now);
  EXPECT_EQ(p_->ProposeIsr(now, kLag), (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(p_->ProposeIsr(now, kLag), std::nullopt);
  // The write failed (say); the controller re-elects this broker in epoch 2.
  ASSERT_TRUE(p_->BecomeLeader(LeaderEpoch(2), {1, 2}, {1}).ok());
  p_->UpdateFollowerState(2, Offset(0), Offset(0), now);
  EXPECT_EQ(p_->ProposeIsr(now, kLag), (std::vector<int32_t>{1, 2}));
}

TEST_F(PartitionIsrTest, FollowersAndUnknownReplicasProposeNothing) {
  Open(2);
  ASSERT_TRUE(p_->BecomeFollower(LeaderEpoch(1), 1, {1, 2}).ok());
  EXPECT_EQ(p_->ProposeIsr(Partition::SteadyNowMs() + 10 * kLag, kLag), std::nullopt);
  Open(1);  // the single-node default: leader of {1}
  Lead(3);
  p_->UpdateFollowerState(7, Offset(3), Offset(3));  // not a replica: no effect
  EXPECT_EQ(p_->replicas(), (std::vector<int32_t>{1}));
  EXPECT_EQ(p_->ProposeIsr(Partition::SteadyNowMs() + 10 * kLag, kLag), std::nullopt);
}

TEST_F(PartitionIsrTest, TruncateFullyAndStartAtEmptiesTheLogAndItsEpochs) {
  Open(2);
  ASSERT_TRUE(p_->BecomeFollower(LeaderEpoch(3), 1, {1, 2}).ok());
  std::string b = LeaderWrittenBatch(0, 4, 1);
  ASSERT_TRUE(p_->AppendAsFollower(MutableBytes(b)).ok());
  p_->SetHighWatermarkFromLeader(Offset(4));
  ASSERT_TRUE(p_->TruncateFullyAndStartAt(Offset(100)).ok());
  EXPECT_EQ(p_->log_start_offset(), Offset(100));
  EXPECT_EQ(p_->log_end_offset(), Offset(100));
  EXPECT_EQ(p_->high_watermark(), Offset(100));
  EXPECT_TRUE(p_->epoch_entries().empty());
  std::string next = LeaderWrittenBatch(100, 2, 3);
  ASSERT_TRUE(p_->AppendAsFollower(MutableBytes(next), LeaderEpoch(3)).ok());
  ASSERT_TRUE(p_->FlushLog().ok());
  EXPECT_EQ(p_->epoch_entries().size(), 1u);
  Open(2);  // reopened: the log and its epoch file agree
  EXPECT_EQ(p_->log_start_offset(), Offset(100));
  EXPECT_EQ(p_->log_end_offset(), Offset(102));
  ASSERT_FALSE(p_->epoch_entries().empty());
  EXPECT_EQ(p_->epoch_entries().front().epoch, LeaderEpoch(3));
  EXPECT_EQ(p_->epoch_entries().front().start_offset, Offset(100));
}

TEST_F(PartitionIsrTest, AFollowerAppendFetchedInAnOlderEpochIsFenced) {
  Open(2);
  ASSERT_TRUE(p_->BecomeFollower(LeaderEpoch(3), 1, {1, 2}).ok());
  std::string b = LeaderWrittenBatch(0, 2, 3);
  auto fenced = p_->AppendAsFollower(MutableBytes(b), LeaderEpoch(2));
  ASSERT_FALSE(fenced.ok());
  EXPECT_EQ(ToKafkaError(fenced.status()), KafkaError::kFencedLeaderEpoch);
  EXPECT_EQ(p_->log_end_offset(), Offset(0));
  EXPECT_TRUE(p_->AppendAsFollower(MutableBytes(b), LeaderEpoch(3)).ok());
}

TEST_F(PartitionIsrTest, ASealedFollowerRefusesItsFetchersWritesUntilUnsealed) {
  // LogDirMover's seal of a follower replica (cluster mode): the replica
  // fetcher's appends and truncations get the retriable
  // NOT_LEADER_OR_FOLLOWER and change nothing; reads still work.
  Open(2);
  ASSERT_TRUE(p_->BecomeFollower(LeaderEpoch(3), 1, {1, 2}).ok());
  std::string b = LeaderWrittenBatch(0, 4, 3);
  ASSERT_TRUE(p_->AppendAsFollower(MutableBytes(b), LeaderEpoch(3)).ok());
  p_->SealFollowerWrites(true);
  std::string next = LeaderWrittenBatch(4, 2, 3);
  auto refused = p_->AppendAsFollower(MutableBytes(next), LeaderEpoch(3));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(ToKafkaError(refused.status()), KafkaError::kNotLeaderOrFollower);
  EXPECT_EQ(ToKafkaError(p_->TruncateTo(Offset(2))), KafkaError::kNotLeaderOrFollower);
  EXPECT_EQ(ToKafkaError(p_->TruncateFullyAndStartAt(Offset(10))),
            KafkaError::kNotLeaderOrFollower);
  EXPECT_EQ(p_->log_end_offset(), Offset(4));
  EXPECT_TRUE(p_->ReadForFollower(Offset(0), 1 << 20).ok());
  p_->SealFollowerWrites(false);  // a failed swap gives the replica back
  EXPECT_TRUE(p_->AppendAsFollower(MutableBytes(next), LeaderEpoch(3)).ok());
  EXPECT_EQ(p_->log_end_offset(), Offset(6));
}

}  // namespace
}  // namespace headrace::broker
