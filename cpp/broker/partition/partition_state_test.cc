// The partition state machine over a real Log in a temporary directory: the
// high-watermark policy, leader and follower appends, the leader-epoch cache
// and its file, truncation by epoch (KIP-101 / KIP-279) and
// min.insync.replicas.
#include <gtest/gtest.h>

#include <filesystem>

#include "broker/base/kafka_error.h"
#include "broker/partition/partition.h"
#include "headrace/record_batch.h"
#include "log/testing.h"

namespace headrace::broker {
namespace {

namespace fs = std::filesystem;

// `records` one-record batches' worth of values in one batch.
std::string Batch(int records, const std::string& tag = "v") {
  std::vector<RecordInput> in;
  for (int i = 0; i < records; ++i) in.push_back({std::nullopt, tag + std::to_string(i), {}, TimestampMs(1000 + i)});
  return BuildBatch(in);
}

// A batch as a leader wrote it: offsets from `base`, stamped with `epoch`.
std::string LeaderBatch(int64_t base, int records, int32_t epoch) {
  std::string b = Batch(records);
  std::span<uint8_t> bytes(reinterpret_cast<uint8_t*>(b.data()), b.size());
  SetBaseOffset(bytes, Offset(base));
  SetPartitionLeaderEpoch(bytes, LeaderEpoch(epoch));
  return b;
}

std::span<uint8_t> Bytes(std::string& s) { return {reinterpret_cast<uint8_t*>(s.data()), s.size()}; }

class PartitionStateTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (p_) (void)p_->Close();
    p_.reset();
  }
  std::shared_ptr<Partition> Open(bool fsync_commit = false, int32_t broker = 0,
                                  TopicSettings settings = {}) {
    if (p_) {
      EXPECT_TRUE(p_->Close().ok());
    }
    PartitionServices services;
    services.commit_requires_fsync = fsync_commit;
    services.local_broker_id = broker;
    auto opened = Partition::Open(data_.string(), TopicPartition{"t", 0}, Uuid::Random(), settings,
                                  services);
    EXPECT_TRUE(opened.ok()) << opened.status().ToString();
    p_ = opened.ok() ? *opened : nullptr;
    return p_;
  }
  Offset Lead(int records, int16_t acks = 1) {
    std::string b = Batch(records);
    auto r = p_->AppendAsLeader(Bytes(b), acks);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r->last_offset : Offset(-1);
  }
  Status Follow(int64_t base, int records, int32_t epoch) {
    std::string b = LeaderBatch(base, records, epoch);
    auto r = p_->AppendAsFollower(Bytes(b));
    return r.ok() ? Status::OK() : r.status();
  }
  headrace::testing::TempDir dir_;
  fs::path data_{dir_.path()};
  std::shared_ptr<Partition> p_;
};

TEST_F(PartitionStateTest, WithoutFsyncPolicyTheHighWatermarkIsTheLogEnd) {
  Open(/*fsync_commit=*/false);
  Lead(3);
  EXPECT_EQ(p_->log_end_offset(), Offset(3));
  EXPECT_EQ(p_->high_watermark(), Offset(3));
  EXPECT_EQ(p_->flushed_offset(), Offset(0));
}

TEST_F(PartitionStateTest, WithFsyncPolicyOnlyFlushedRecordsAreCommittedAndVisible) {
  Open(/*fsync_commit=*/true);
  Lead(3);
  EXPECT_EQ(p_->high_watermark(), Offset(0));
  auto read = p_->Read(Offset(0), 1 << 20, IsolationLevel::kReadUncommitted);
  ASSERT_TRUE(read.ok());
  EXPECT_TRUE(read->data.slices.empty());
  EXPECT_EQ(read->high_watermark, Offset(0));
  ASSERT_TRUE(p_->FlushLog().ok());
  EXPECT_EQ(p_->flushed_offset(), Offset(3));
  EXPECT_EQ(p_->high_watermark(), Offset(3));
  read = p_->Read(Offset(0), 1 << 20, IsolationLevel::kReadUncommitted);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->data.slices.size(), 1u);
}

TEST_F(PartitionStateTest, HighWatermarkIsTheIsrMinimumAndFollowsFollowerFetches) {
  Open(/*fsync_commit=*/true, /*broker=*/1);
  ASSERT_TRUE(p_->BecomeLeader(LeaderEpoch(1), {1, 2, 3}, {1, 2, 3}).ok());
  Lead(10);
  ASSERT_TRUE(p_->FlushLog().ok());
  EXPECT_EQ(p_->high_watermark(), Offset(0));  // followers have nothing yet
  p_->UpdateFollowerState(2, Offset(10), Offset(10));
  p_->UpdateFollowerState(3, Offset(6), Offset(4));
  EXPECT_EQ(p_->high_watermark(), Offset(4));  // broker 3 has fsynced below 4
  p_->UpdateFollowerState(3, Offset(10), Offset(8));
  EXPECT_EQ(p_->high_watermark(), Offset(8));
  ASSERT_TRUE(p_->UpdateIsr({1, 2}).ok());  // broker 3 dropped out of the ISR
  EXPECT_EQ(p_->high_watermark(), Offset(10));
  p_->UpdateFollowerState(9, Offset(10), Offset(10));  // not a replica: ignored
  EXPECT_EQ(p_->replicas(), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(p_->isr(), (std::vector<int32_t>{1, 2}));
}

TEST_F(PartitionStateTest, MinInsyncReplicasRefusesAcksAllBelowIt) {
  TopicSettings settings;
  settings.min_insync_replicas = 2;
  Open(false, 0, settings);
  std::string b = Batch(1);
  auto refused = p_->AppendAsLeader(Bytes(b), -1);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(ToKafkaError(refused.status()), KafkaError::kNotEnoughReplicas);
  EXPECT_EQ(p_->log_end_offset(), Offset(0));  // nothing appended
  Lead(1, /*acks=*/1);                          // acks=1 does not care
  ASSERT_TRUE(p_->BecomeLeader(LeaderEpoch(1), {0, 1}, {0, 1}).ok());
  Lead(1, /*acks=*/-1);  // two in sync now
  EXPECT_EQ(p_->log_end_offset(), Offset(2));
}

TEST_F(PartitionStateTest, LeaderEpochsAreStampedCachedAndPersisted) {
  Open();
  Lead(2);                                                   // epoch 0 at 0
  ASSERT_TRUE(p_->BecomeLeader(LeaderEpoch(3), {0}, {0}).ok());  // epoch 3 at 2
  Lead(4);
  EXPECT_EQ(p_->epoch_entries(),
            (std::vector<EpochEntry>{{LeaderEpoch(0), Offset(0)}, {LeaderEpoch(3), Offset(2)}}));
  auto read = p_->Read(Offset(2), 1 << 20, IsolationLevel::kReadUncommitted);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(p_->EndOffsetForEpoch(LeaderEpoch(0)), (EpochEndOffset{LeaderEpoch(0), Offset(2)}));
  EXPECT_EQ(p_->EndOffsetForEpoch(LeaderEpoch(3)), (EpochEndOffset{LeaderEpoch(3), Offset(6)}));
  EXPECT_EQ(p_->EpochAt(Offset(1)), LeaderEpoch(0));
  EXPECT_EQ(p_->EpochAt(Offset(5)), LeaderEpoch(3));
  Open();  // Close persisted the cache; reopening leads the latest epoch
  EXPECT_TRUE(fs::exists(data_ / "t-0" / "leader-epoch-checkpoint"));
  EXPECT_EQ(p_->leader_epoch(), LeaderEpoch(3));
  EXPECT_EQ(p_->epoch_entries().size(), 2u);
}

TEST_F(PartitionStateTest, ALostEpochFileIsRebuiltFromTheBatches) {
  Open();
  Lead(2);
  ASSERT_TRUE(p_->BecomeLeader(LeaderEpoch(2), {0}, {0}).ok());
  Lead(3);
  ASSERT_TRUE(p_->BecomeLeader(LeaderEpoch(5), {0}, {0}).ok());
  Lead(1);
  auto before = p_->epoch_entries();
  ASSERT_TRUE(p_->Close().ok());
  p_.reset();
  fs::remove(data_ / "t-0" / "leader-epoch-checkpoint");
  Open();
  EXPECT_EQ(p_->epoch_entries(), before);
  EXPECT_EQ(p_->leader_epoch(), LeaderEpoch(5));
}

TEST_F(PartitionStateTest, FollowerAppendKeepsOffsetsAndEpochsAndRefusesOverlaps) {
  Open(false, /*broker=*/2);
  ASSERT_TRUE(p_->BecomeFollower(LeaderEpoch(4), /*leader=*/1, {1, 2}).ok());
  std::string mine = Batch(1);
  EXPECT_EQ(ToKafkaError(p_->AppendAsLeader(Bytes(mine)).status()), KafkaError::kNotLeaderOrFollower);
  ASSERT_TRUE(Follow(0, 3, 2).ok());
  ASSERT_TRUE(Follow(3, 2, 4).ok());
  EXPECT_EQ(p_->log_end_offset(), Offset(5));
  EXPECT_EQ(p_->high_watermark(), Offset(0));  // a follower's HW comes from its leader
  p_->SetHighWatermarkFromLeader(Offset(9));
  EXPECT_EQ(p_->high_watermark(), Offset(5));  // bounded by the local LEO
  // The follower's own epoch 0 (from opening) was replaced: epoch 2 starts
  // at the same offset.
  EXPECT_EQ(p_->epoch_entries(),
            (std::vector<EpochEntry>{{LeaderEpoch(2), Offset(0)}, {LeaderEpoch(4), Offset(3)}}));
  EXPECT_EQ(p_->EpochAt(Offset(4)), LeaderEpoch(4));
  EXPECT_EQ(p_->EpochAt(Offset(1)), LeaderEpoch(2));
  // An overlap and a batch from the past are refused; nothing written.
  EXPECT_EQ(Follow(4, 1, 4).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Follow(0, 1, 4).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(p_->log_end_offset(), Offset(5));
  // A gap is a leader's compacted log (docs/compaction.md): offsets kept.
  ASSERT_TRUE(Follow(6, 1, 4).ok());
  EXPECT_EQ(p_->log_end_offset(), Offset(7));
}

// KIP-101: a follower that had records the new leader never got truncates
// to the leader's end offset for its epoch instead of the high watermark.
TEST_F(PartitionStateTest, TruncateByEpochCutsTheDivergedTail) {
  Open(false, 2);
  ASSERT_TRUE(p_->BecomeFollower(LeaderEpoch(1), 1, {1, 2}).ok());
  ASSERT_TRUE(Follow(0, 4, 1).ok());
  ASSERT_TRUE(Follow(4, 2, 1).ok());  // offsets 4-5 never reached the new leader
  p_->SetHighWatermarkFromLeader(Offset(2));
  // The new leader (epoch 2) ended epoch 1 at offset 4.
  auto r = p_->TruncateByEpoch(LeaderEpoch(1), Offset(4));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->completed);
  EXPECT_EQ(r->truncated_to, Offset(4));
  EXPECT_EQ(p_->log_end_offset(), Offset(4));  // not the HW (2): no data loss
  ASSERT_TRUE(Follow(4, 1, 2).ok());            // continues from the leader
}

// KIP-279, "leader changed twice": the follower never saw the epoch the
// leader answers with, so it cuts to where its own older epoch ends and asks
// again; the second answer completes the truncation.
TEST_F(PartitionStateTest, TruncateByEpochWhenTheLeaderChangedTwice) {
  Open(false, 2);
  ASSERT_TRUE(p_->BecomeFollower(LeaderEpoch(1), 1, {1, 2, 3}).ok());
  ASSERT_TRUE(Follow(0, 2, 1).ok());  // epoch 1: offsets 0-1
  ASSERT_TRUE(Follow(2, 3, 3).ok());  // epoch 3: offsets 2-4 (this broker's own view)
  // The leader knows epochs 1 (0-2) and 2 (3-...) but not 3: asked for 3,
  // it answers epoch 2 ending at 6.
  auto first = p_->TruncateByEpoch(LeaderEpoch(2), Offset(6));
  ASSERT_TRUE(first.ok());
  EXPECT_FALSE(first->completed);
  EXPECT_EQ(first->truncated_to, Offset(2));  // where our epoch 1 ends
  EXPECT_EQ(p_->epoch_entries().back().epoch, LeaderEpoch(1));
  // Asked again with our latest epoch (1): epoch 1 ended at 3 on the leader.
  auto second = p_->TruncateByEpoch(LeaderEpoch(1), Offset(3));
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(second->completed);
  EXPECT_EQ(second->truncated_to, Offset(2));  // min(our end of epoch 1, leader's)
}

TEST_F(PartitionStateTest, UndefinedEpochFallsBackToTheHighWatermark) {
  Open(false, 2);
  ASSERT_TRUE(p_->BecomeFollower(LeaderEpoch(1), 1, {1, 2}).ok());
  ASSERT_TRUE(Follow(0, 3, 1).ok());
  ASSERT_TRUE(Follow(3, 2, 1).ok());
  p_->SetHighWatermarkFromLeader(Offset(3));
  auto r = p_->TruncateByEpoch(LeaderEpoch(kUndefinedEpoch), Offset(kUndefinedEpochOffset));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->truncated_to, Offset(3));
  // Truncation keeps whole batches: an offset inside one cuts before it, and
  // the follower fetches that batch again.
  ASSERT_TRUE(p_->TruncateTo(Offset(1)).ok());
  EXPECT_EQ(p_->log_end_offset(), Offset(0));
}

TEST_F(PartitionStateTest, TruncationMovesTheHighWatermarkBackAndDropsEpochs) {
  Open(false, 2);
  ASSERT_TRUE(p_->BecomeFollower(LeaderEpoch(1), 1, {1, 2}).ok());
  ASSERT_TRUE(Follow(0, 3, 1).ok());
  ASSERT_TRUE(Follow(3, 3, 2).ok());
  p_->SetHighWatermarkFromLeader(Offset(6));
  ASSERT_TRUE(p_->TruncateTo(Offset(3)).ok());
  EXPECT_EQ(p_->log_end_offset(), Offset(3));
  EXPECT_EQ(p_->high_watermark(), Offset(3));
  EXPECT_EQ(p_->epoch_entries().back().epoch, LeaderEpoch(1));
}

TEST_F(PartitionStateTest, StaleLeaderEpochIsFenced) {
  Open();
  ASSERT_TRUE(p_->BecomeLeader(LeaderEpoch(5), {0}, {0}).ok());
  EXPECT_EQ(ToKafkaError(p_->BecomeLeader(LeaderEpoch(4), {0}, {0})), KafkaError::kFencedLeaderEpoch);
  EXPECT_EQ(ToKafkaError(p_->BecomeFollower(LeaderEpoch(3), 1, {0, 1})),
            KafkaError::kFencedLeaderEpoch);
  EXPECT_FALSE(p_->BecomeLeader(LeaderEpoch(6), {1, 2}, {1, 2}).ok());  // not a replica
}

}  // namespace
}  // namespace headrace::broker
