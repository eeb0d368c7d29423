// The leader side of follower fetches (cpp/broker/api/fetch.cc) over a real
// socket: a follower (replica_id >= 0) reads past the HW up to the LEO and
// its fetch offset moves the leader's view of it (and so the HW); epochs
// are fenced; a non-leader answers NOT_LEADER_OR_FOLLOWER; a fetch past the
// LEO is OFFSET_OUT_OF_RANGE; a diverged last_fetched_epoch gets
// diverging_epoch; a follower long poll wakes on a new append; with
// headrace.acks.all.fsync the follower's HeadraceFlushedOffset tag (or,
// without it, its fetch offset) bounds the HW.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "broker/api/kafka_test_client.h"
#include "broker/base/kafka_error.h"
#include "broker/partition/partition_test_util.h"
#include "broker/replication/leader_broker_test_util.h"
#include "log/testing.h"

namespace headrace::broker {
namespace {

using protocol::FetchRequest;
using protocol::FetchResponse;
using testing::LeaderBroker;
using testing::MutableBytes;
using testing::ProducerBatch;

class FollowerFetchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    leader_ = std::make_unique<LeaderBroker>(dir_.path(), /*node_id=*/1, /*acks_all_fsync=*/false);
    ASSERT_TRUE(leader_->Start());
    p_ = leader_->CreateTopic("t");
    ASSERT_TRUE(p_);
    client_ = std::make_unique<headrace::testing::KafkaTestClient>(leader_->port());
    ASSERT_TRUE(client_->connected());
  }
  void TearDown() override {
    client_.reset();
    p_.reset();
    leader_->Stop();
  }
  void Lead(int records) {
    std::string b = ProducerBatch(records);
    auto r = p_->AppendAsLeader(MutableBytes(b), 1);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  // A fetch of t-0 by `replica_id` (-1: a consumer) at `version`.
  FetchResponse::PartitionData Fetch(int32_t replica_id, int64_t offset, int32_t epoch,
                                     int16_t version = 12, int32_t last_fetched_epoch = -1,
                                     int32_t max_wait_ms = 0) {
    FetchRequest req;
    req.replica_id = replica_id;
    req.replica_state.replica_id = replica_id;
    req.max_wait_ms = max_wait_ms;
    req.min_bytes = 1;
    auto& t = req.topics.emplace_back();
    t.topic = "t";
    t.topic_id = p_->topic_id();
    auto& p = t.partitions.emplace_back();
    p.partition = 0;
    p.fetch_offset = offset;
    p.current_leader_epoch = epoch;
    p.last_fetched_epoch = last_fetched_epoch;
    p.partition_max_bytes = 1 << 20;
    std::string error;
    auto resp = client_->Call<FetchResponse>(req, version, &error);
    EXPECT_TRUE(resp.has_value()) << error;
    if (!resp || resp->responses.size() != 1 || resp->responses[0].partitions.size() != 1) {
      ADD_FAILURE() << "fetch response has the wrong shape";
      return {};
    }
    return resp->responses[0].partitions[0];
  }
  static KafkaError Error(const FetchResponse::PartitionData& d) {
    return static_cast<KafkaError>(d.error_code);
  }

  headrace::testing::TempDir dir_;
  std::unique_ptr<LeaderBroker> leader_;
  std::shared_ptr<Partition> p_;
  std::unique_ptr<headrace::testing::KafkaTestClient> client_;
};

TEST_F(FollowerFetchTest, AFollowerReadsToTheLogEndAndItsFetchOffsetMovesTheHighWatermark) {
  ASSERT_TRUE(p_->BecomeLeader(LeaderEpoch(2), {1, 2}, {1, 2}).ok());
  Lead(10);
  EXPECT_EQ(p_->high_watermark(), Offset(0));  // broker 2 has nothing yet
  auto consumer = Fetch(-1, 0, 2);
  EXPECT_EQ(Error(consumer), KafkaError::kNone);
  EXPECT_EQ(consumer.records.size(), 0);  // nothing committed
  auto first = Fetch(2, 0, 2);
  ASSERT_EQ(Error(first), KafkaError::kNone);
  EXPECT_GT(first.records.size(), 0);  // uncommitted records, for the follower
  EXPECT_EQ(first.high_watermark, 0);
  auto second = Fetch(2, 10, 2);  // the follower has them all now
  ASSERT_EQ(Error(second), KafkaError::kNone);
  EXPECT_EQ(second.records.size(), 0);
  EXPECT_EQ(second.high_watermark, 10);
  EXPECT_EQ(p_->high_watermark(), Offset(10));
  auto after = Fetch(-1, 0, -1);
  EXPECT_GT(after.records.size(), 0);
  EXPECT_EQ(after.high_watermark, 10);
}

TEST_F(FollowerFetchTest, EpochsAreFencedAndOnlyTheLeaderServes) {
  ASSERT_TRUE(p_->BecomeLeader(LeaderEpoch(2), {1, 2}, {1, 2}).ok());
  Lead(3);
  EXPECT_EQ(Error(Fetch(2, 0, 1)), KafkaError::kFencedLeaderEpoch);
  EXPECT_EQ(Error(Fetch(2, 0, 3)), KafkaError::kUnknownLeaderEpoch);
  EXPECT_EQ(Error(Fetch(-1, 0, 1)), KafkaError::kFencedLeaderEpoch);
  EXPECT_EQ(Error(Fetch(-1, 0, 3)), KafkaError::kUnknownLeaderEpoch);
  auto past = Fetch(2, 4, 2);
  EXPECT_EQ(Error(past), KafkaError::kOffsetOutOfRange);
  EXPECT_EQ(past.log_start_offset, 0);  // so that the follower can start over
  EXPECT_EQ(p_->high_watermark(), Offset(0));  // an out-of-range fetch moves nothing
  ASSERT_TRUE(p_->BecomeFollower(LeaderEpoch(3), 2, {1, 2}).ok());
  EXPECT_EQ(Error(Fetch(2, 0, 3)), KafkaError::kNotLeaderOrFollower);
  EXPECT_EQ(Error(Fetch(-1, 0, 3)), KafkaError::kNotLeaderOrFollower);
  EXPECT_EQ(Error(Fetch(-1, 0, -1)), KafkaError::kNotLeaderOrFollower);
}

TEST_F(FollowerFetchTest, ADivergedLastFetchedEpochGetsTheDivergingEpoch) {
  Lead(5);  // epoch 0: offsets 0-4
  ASSERT_TRUE(p_->BecomeLeader(LeaderEpoch(2), {1, 2}, {1, 2}).ok());
  Lead(5);  // epoch 2: offsets 5-9
  // The follower wrote offsets 5 and 6 in epoch 1, which this leader never had.
  auto diverged = Fetch(2, 7, 2, 12, /*last_fetched_epoch=*/1);
  ASSERT_EQ(Error(diverged), KafkaError::kNone);
  EXPECT_EQ(diverged.diverging_epoch.epoch, 0);
  EXPECT_EQ(diverged.diverging_epoch.end_offset, 5);
  EXPECT_EQ(diverged.records.size(), 0);
  auto fine = Fetch(2, 5, 2, 12, /*last_fetched_epoch=*/0);
  ASSERT_EQ(Error(fine), KafkaError::kNone);
  EXPECT_EQ(fine.diverging_epoch.epoch, -1);
  EXPECT_GT(fine.records.size(), 0);
}

TEST_F(FollowerFetchTest, AFollowerLongPollWakesOnAnAppend) {
  ASSERT_TRUE(p_->BecomeLeader(LeaderEpoch(1), {1, 2}, {1, 2}).ok());
  Lead(2);
  std::thread appender([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    Lead(3);
  });
  auto start = std::chrono::steady_clock::now();
  auto got = Fetch(2, 2, 1, 12, -1, /*max_wait_ms=*/5000);
  auto took = std::chrono::steady_clock::now() - start;
  appender.join();
  EXPECT_EQ(Error(got), KafkaError::kNone);
  EXPECT_GT(got.records.size(), 0);  // uncommitted: the follower at 2 holds the HW at 2
  EXPECT_LT(took, std::chrono::milliseconds(3000));
}

TEST_F(FollowerFetchTest, AnUnknownReplicaIsServedWithoutEffectAndV15CarriesTheId) {
  Lead(4);  // the single-node default: leader of {1} in epoch 0
  auto got = Fetch(7, 0, 0, /*version=*/15);
  ASSERT_EQ(Error(got), KafkaError::kNone);
  EXPECT_GT(got.records.size(), 0);
  EXPECT_EQ(p_->replicas(), (std::vector<int32_t>{1}));
  EXPECT_EQ(p_->isr(), (std::vector<int32_t>{1}));
  EXPECT_EQ(Error(Fetch(7, 5, 0, 15)), KafkaError::kOffsetOutOfRange);  // v15: a follower
  EXPECT_EQ(Error(Fetch(-1, 4, 0, 15)), KafkaError::kNone);             // consumer at the end
}

// With headrace.acks.all.fsync the HW counts each ISR follower's flushed
// offset: the partition's HeadraceFlushedOffset tag when sent (bounded by
// the fetch offset), the fetch offset when not.
TEST(FollowerFlushedOffsetTest, TheTaggedFlushedOffsetBoundsTheHighWatermark) {
  headrace::testing::TempDir dir;
  LeaderBroker leader(dir.path(), /*node_id=*/1, /*acks_all_fsync=*/true);
  ASSERT_TRUE(leader.Start());
  auto p = leader.CreateTopic("t");
  ASSERT_TRUE(p);
  ASSERT_TRUE(p->BecomeLeader(LeaderEpoch(2), {1, 2}, {1, 2}).ok());
  std::string b = ProducerBatch(10);
  ASSERT_TRUE(p->AppendAsLeader(MutableBytes(b), 1).ok());
  ASSERT_TRUE(p->WaitFlushed(Offset(10), std::chrono::steady_clock::now() +
                                             std::chrono::seconds(10)));  // the leader's own
  headrace::testing::KafkaTestClient client(leader.port());
  ASSERT_TRUE(client.connected());
  auto fetch_at_10 = [&](int64_t flushed) -> int64_t {
    FetchRequest req;
    req.replica_id = 2;
    req.max_wait_ms = 0;
    req.min_bytes = 1;
    auto& t = req.topics.emplace_back();
    t.topic = "t";
    auto& fp = t.partitions.emplace_back();
    fp.partition = 0;
    fp.fetch_offset = 10;
    fp.current_leader_epoch = 2;
    fp.partition_max_bytes = 1 << 20;
    fp.headrace_flushed_offset = flushed;
    std::string error;
    auto resp = client.Call<FetchResponse>(req, 12, &error);
    EXPECT_TRUE(resp.has_value()) << error;
    if (!resp || resp->responses.empty() || resp->responses[0].partitions.empty()) return -2;
    EXPECT_EQ(resp->responses[0].partitions[0].error_code, 0);
    return resp->responses[0].partitions[0].high_watermark;
  };
  EXPECT_EQ(fetch_at_10(4), 4);    // has 10, fsynced 4
  EXPECT_EQ(fetch_at_10(7), 7);
  EXPECT_EQ(fetch_at_10(99), 10);  // never above the fetch offset
  EXPECT_EQ(p->high_watermark(), Offset(10));
  p.reset();
  leader.Stop();
}

TEST(FollowerFlushedOffsetTest, WithoutTheTagTheFetchOffsetIsTheFlushedOffset) {
  headrace::testing::TempDir dir;
  LeaderBroker leader(dir.path(), /*node_id=*/1, /*acks_all_fsync=*/true);
  ASSERT_TRUE(leader.Start());
  auto p = leader.CreateTopic("t");
  ASSERT_TRUE(p);
  ASSERT_TRUE(p->BecomeLeader(LeaderEpoch(2), {1, 2}, {1, 2}).ok());
  std::string b = ProducerBatch(10);
  ASSERT_TRUE(p->AppendAsLeader(MutableBytes(b), 1).ok());
  ASSERT_TRUE(p->WaitFlushed(Offset(10), std::chrono::steady_clock::now() +
                                             std::chrono::seconds(10)));
  headrace::testing::KafkaTestClient client(leader.port());
  ASSERT_TRUE(client.connected());
  FetchRequest req;  // HeadraceFlushedOffset left at -1: not written
  req.replica_id = 2;
  req.max_wait_ms = 0;
  req.min_bytes = 1;
  auto& t = req.topics.emplace_back();
  t.topic = "t";
  auto& fp = t.partitions.emplace_back();
  fp.partition = 0;
  fp.fetch_offset = 10;
  fp.current_leader_epoch = 2;
  fp.partition_max_bytes = 1 << 20;
  std::string error;
  auto resp = client.Call<FetchResponse>(req, 12, &error);
  ASSERT_TRUE(resp.has_value()) << error;
  EXPECT_EQ(resp->responses[0].partitions[0].high_watermark, 10);
  p.reset();
  leader.Stop();
}

}  // namespace
}  // namespace headrace::broker
