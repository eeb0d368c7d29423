// Two brokers in one process, both real servers: broker 1 leads t-0 with
// replicas {1, 2}, broker 2 follows it with a ReplicaFetcherManager. An
// acks=all produce to broker 1 is answered only once broker 2 has fetched
// and fsynced it; broker 2's log ends byte for byte equal; with the
// follower gone a produce times out until the leader's proposed ISR
// shrink is applied.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "broker/api/kafka_test_client.h"
#include "broker/base/kafka_error.h"
#include "broker/partition/partition_test_util.h"
#include "broker/replication/isr_changes.h"
#include "broker/replication/leader_broker_test_util.h"
#include "broker/replication/replica_fetcher.h"
#include "common/fault_injecting_env.h"
#include "log/testing.h"

namespace headrace::broker::replication {
namespace {

using broker::testing::LeaderBroker;
using broker::testing::ProducerBatch;

protocol::ProduceRequest ProduceOf(std::string batch, int32_t timeout_ms) {
  protocol::ProduceRequest req;
  req.acks = -1;
  req.timeout_ms = timeout_ms;
  auto& t = req.topic_data.emplace_back();
  t.name = "t";
  t.partition_data.push_back({0, protocol::Records::FromBytes(std::move(batch))});
  return req;
}

KafkaError ProduceAll(headrace::testing::KafkaTestClient& client, int records, int32_t timeout_ms) {
  std::string error;
  auto resp = client.Call<protocol::ProduceResponse>(ProduceOf(ProducerBatch(records), timeout_ms),
                                                     9, &error);
  EXPECT_TRUE(resp.has_value()) << error;
  if (!resp) return KafkaError::kUnknownServerError;
  return static_cast<KafkaError>(resp->responses[0].partition_responses[0].error_code);
}

TEST(ReplicationE2ETest, AcksAllWaitsForTheFollowersFsyncAndTheIsrShrinkLetsItGoOn) {
  headrace::testing::TempDir dir1, dir2;
  LeaderBroker b1(dir1.path(), 1, /*acks_all_fsync=*/true);
  LeaderBroker b2(dir2.path(), 2, /*acks_all_fsync=*/true);
  ASSERT_TRUE(b1.Start());
  ASSERT_TRUE(b2.Start());
  auto leader = b1.CreateTopic("t");
  auto follower = b2.CreateTopic("t");
  ASSERT_TRUE(leader && follower);
  ASSERT_TRUE(leader->BecomeLeader(LeaderEpoch(1), {1, 2}, {1, 2}).ok());
  ASSERT_TRUE(follower->BecomeFollower(LeaderEpoch(1), 1, {1, 2}).ok());
  ReplicaFetcherConfig config;
  config.fetch_wait_max_ms = 200;
  config.fetch_backoff_ms = 100;
  ReplicaFetcherManager fetchers(2, config);
  fetchers.SetFollowed({{follower, 1, "127.0.0.1", b1.port()}});

  headrace::testing::KafkaTestClient client(b1.port());
  ASSERT_TRUE(client.connected());
  for (int i = 0; i < 20; ++i) {
    const auto start = std::chrono::steady_clock::now();
    ASSERT_EQ(ProduceAll(client, 50, 5000), KafkaError::kNone) << "produce " << i;
    // Answered once committed: the follower has it, fsynced (its next fetch
    // said so), long before the follower's long poll would have ended.
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(2000));
    EXPECT_GE(follower->log_end_offset(), Offset(50 * (i + 1)));
  }
  EXPECT_EQ(leader->high_watermark(), Offset(1000));
  EXPECT_GE(follower->flushed_offset(), Offset(1000));
  const auto wait_hw = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (follower->high_watermark() < Offset(1000) && std::chrono::steady_clock::now() < wait_hw) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(follower->high_watermark(), Offset(1000));  // from the leader's answers
  EXPECT_TRUE(CollectIsrChanges({leader}, Partition::SteadyNowMs(), 30000).empty());

  // The follower stops fetching: acks=all cannot commit while it is in the ISR.
  fetchers.SetFollowed({});
  ASSERT_EQ(ProduceAll(client, 10, 300), KafkaError::kRequestTimedOut);
  const int64_t lag = 1000;
  auto changes = CollectIsrChanges({leader}, Partition::SteadyNowMs() + 2 * lag, lag);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0], (IsrChange{"t", 0, 1, {1}}));
  ASSERT_TRUE(leader->UpdateIsr(changes[0].isr).ok());  // what the control plane does
  // The record that timed out is committed now, and the next produce too.
  EXPECT_EQ(ProduceAll(client, 10, 5000), KafkaError::kNone);
  EXPECT_EQ(leader->high_watermark(), Offset(1020));

  // Back: it catches up and the leader proposes it for the ISR again.
  fetchers.SetFollowed({{follower, 1, "127.0.0.1", b1.port()}});
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (follower->log_end_offset() < Offset(1020) && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(follower->log_end_offset(), Offset(1020));
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // its next fetch reports it
  changes = CollectIsrChanges({leader}, Partition::SteadyNowMs(), lag);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].isr, (std::vector<int32_t>{1, 2}));
  fetchers.Shutdown();
  leader.reset();
  follower.reset();
  b2.Stop();
  b1.Stop();
}

// The follower fsyncs behind its fetches (the flusher) and reports its
// flushed offset apart from its fetch offset: an acks=all produce the
// follower has fetched but not fsynced is not answered; once its fsync is
// let go it is. Then its fsync fails: the follower goes offline, and the
// produce it fetched is never answered while it stays in the ISR.
TEST(ReplicationE2ETest, AcksAllIsNotAnsweredBeforeTheFollowersFsync) {
  headrace::testing::TempDir dir1, dir2, holds;
  const std::string hold = holds.path() + "/hold";
  FaultInjectingEnv follower_env(FileEnv::Default());
  LeaderBroker b1(dir1.path(), 1, /*acks_all_fsync=*/true);
  LeaderBroker b2(dir2.path(), 2, /*acks_all_fsync=*/true);
  b2.set_file_env(&follower_env);
  ASSERT_TRUE(b1.Start());
  ASSERT_TRUE(b2.Start());
  auto leader = b1.CreateTopic("t");
  auto follower = b2.CreateTopic("t");
  ASSERT_TRUE(leader && follower);
  ASSERT_TRUE(leader->BecomeLeader(LeaderEpoch(1), {1, 2}, {1, 2}).ok());
  ASSERT_TRUE(follower->BecomeFollower(LeaderEpoch(1), 1, {1, 2}).ok());
  ReplicaFetcherConfig config;
  config.fetch_wait_max_ms = 200;
  config.fetch_backoff_ms = 100;
  ReplicaFetcherManager fetchers(2, config);
  fetchers.SetFollowed({{follower, 1, "127.0.0.1", b1.port()}});
  headrace::testing::KafkaTestClient client(b1.port());
  ASSERT_TRUE(client.connected());
  ASSERT_EQ(ProduceAll(client, 10, 5000), KafkaError::kNone);  // the pipeline runs
  ASSERT_EQ(leader->high_watermark(), Offset(10));

  // 1. The follower's segment fsyncs wait while `hold` exists.
  { std::ofstream(hold) << "held"; }
  FaultRule held;
  held.op = FileOp::kSync;
  held.path_substr = ".log";
  held.hold_path = hold;
  follower_env.AddRule(held);
  std::atomic<int> answer{-1};
  std::thread producer([&] {
    headrace::testing::KafkaTestClient c(b1.port());
    answer = static_cast<int>(ProduceAll(c, 50, 20000));
  });
  const auto fetched_by = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (follower->log_end_offset() < Offset(60) && std::chrono::steady_clock::now() < fetched_by) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(follower->log_end_offset(), Offset(60));  // fetched...
  std::this_thread::sleep_for(std::chrono::milliseconds(600));  // several fetch rounds
  EXPECT_LT(follower->flushed_offset(), Offset(60));  // ...not fsynced...
  EXPECT_EQ(answer.load(), -1) << "acks=all answered before the follower's fsync";
  EXPECT_EQ(leader->high_watermark(), Offset(10));    // ...so not committed
  std::filesystem::remove(hold);
  producer.join();
  EXPECT_EQ(answer.load(), static_cast<int>(KafkaError::kNone));
  EXPECT_EQ(leader->high_watermark(), Offset(60));

  // 2. Its next segment fsync fails: offline, never reported flushed.
  follower_env.ClearRules();
  FaultRule broken;
  broken.op = FileOp::kSync;
  broken.path_substr = ".log";
  follower_env.AddRule(broken);
  EXPECT_EQ(ProduceAll(client, 20, 1500), KafkaError::kRequestTimedOut);
  EXPECT_TRUE(follower->offline());
  EXPECT_EQ(follower->flushed_offset(), Offset(60));
  EXPECT_EQ(leader->high_watermark(), Offset(60));
  fetchers.Shutdown();
  leader.reset();
  follower.reset();
  b2.Stop(/*clean=*/false);  // its partition is offline
  b1.Stop();
}

}  // namespace
}  // namespace headrace::broker::replication
