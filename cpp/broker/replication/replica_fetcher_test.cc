// ReplicaFetcherManager against real brokers over real sockets:
//   - a follower Partition copies a single-node headrace::Broker's topic
//     (thousands of records in many batches) until its log is byte for byte
//     the leader's, keeps following new produces, backs off (without a busy
//     loop) while the leader is down and resumes when it is back;
//   - a follower with records of an epoch the leader never had truncates
//     them (KIP-101) and ends identical;
//   - a follower below the leader's log start starts over there.
#include "broker/replication/replica_fetcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "broker/api/broker_test_fixture.h"
#include "broker/base/kafka_error.h"
#include "broker/partition/partition_dir.h"
#include "broker/partition/partition_test_util.h"
#include "broker/replication/leader_broker_test_util.h"
#include "common/file_slice.h"
#include "log/testing.h"

namespace headrace::broker::replication {
namespace {

namespace fs = std::filesystem;
using broker::testing::LeaderBroker;
using broker::testing::LeaderWrittenBatch;
using broker::testing::MutableBytes;
using broker::testing::ProducerBatch;

constexpr int32_t kLeaderId = 1;
constexpr int32_t kFollowerId = 2;

ReplicaFetcherConfig TestConfig() {
  ReplicaFetcherConfig c;
  c.fetch_wait_max_ms = 100;
  c.fetch_backoff_ms = 100;
  c.fetch_max_bytes = 16 * 1024;  // several fetches for the whole log
  c.socket_timeout_ms = 5000;
  return c;
}

// Every .log file of a partition directory, concatenated in offset order.
std::string LogBytes(const std::string& partition_dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(partition_dir)) {
    if (e.path().extension() == ".log") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::string out;
  for (const fs::path& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    out += ss.str();
  }
  return out;
}

bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds limit = std::chrono::seconds(20)) {
  const auto give_up = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// A follower replica of t-0 in its own data dir, as broker kFollowerId.
std::shared_ptr<Partition> OpenFollower(const std::string& data_dir, const std::string& topic) {
  PartitionServices services;
  services.local_broker_id = kFollowerId;
  services.commit_requires_fsync = true;  // no flusher: the fetcher fsyncs before fetching again
  auto p = Partition::Open(data_dir, TopicPartition{topic, 0}, Uuid::Random(), {}, services);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? *p : nullptr;
}

class ReplicaFetcherTest : public headrace::testing::BrokerFixture {
 protected:
  ReplicaFetcherTest() { base_settings_ = {{"node.id", std::to_string(kLeaderId)}}; }

  // Produces `batches` batches of `records` records to t-0 (acks=all),
  // retrying while the topic is being auto-created.
  void Produce(int batches, int records) {
    for (int b = 0; b < batches; ++b) {
      protocol::ProduceRequest req;
      req.acks = -1;
      req.timeout_ms = 5000;
      auto& t = req.topic_data.emplace_back();
      t.name = "t";
      t.partition_data.push_back({0, protocol::Records::FromBytes(ProducerBatch(records, "r"))});
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      for (;;) {
        auto resp = Call<protocol::ProduceResponse>(req, 9);
        ASSERT_EQ(resp.responses.size(), 1u);
        const int16_t code = resp.responses[0].partition_responses[0].error_code;
        if (code == Code(KafkaError::kNone)) break;
        ASSERT_EQ(code, Code(KafkaError::kLeaderNotAvailable));
        ASSERT_LT(std::chrono::steady_clock::now(), give_up);
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
    produced_ += int64_t{batches} * records;
  }
  std::string LeaderDir() const { return PartitionDirPath(dir_.path(), TopicPartition{"t", 0}); }

  int64_t produced_ = 0;
};

TEST_F(ReplicaFetcherTest, FollowsARealBrokerByteForByteAndSurvivesItsRestart) {
  Produce(40, 100);  // 4000 records in 40 batches
  headrace::testing::TempDir follower_dir;
  auto follower = OpenFollower(follower_dir.path(), "t");
  ASSERT_TRUE(follower);
  ASSERT_TRUE(follower->BecomeFollower(LeaderEpoch(0), kLeaderId, {kLeaderId, kFollowerId}).ok());
  ReplicaFetcherManager fetchers(kFollowerId, TestConfig());
  fetchers.SetFollowed({{follower, kLeaderId, "127.0.0.1", port_}});

  ASSERT_TRUE(WaitFor([&] { return follower->log_end_offset() == Offset(produced_); }))
      << "follower LEO " << follower->log_end_offset().value();
  ASSERT_TRUE(WaitFor([&] { return follower->high_watermark() == Offset(produced_); }));
  const std::string follower_partition_dir = follower->dir();
  EXPECT_EQ(LogBytes(follower_partition_dir), LogBytes(LeaderDir()));
  EXPECT_GE(fetchers.stats().fetch_requests, 3u);  // 40 batches of ~1.3 KB, 16 KB a fetch
  EXPECT_EQ(fetchers.stats().records_appended, static_cast<uint64_t>(produced_));

  Produce(10, 50);  // it keeps following
  ASSERT_TRUE(WaitFor([&] { return follower->log_end_offset() == Offset(produced_); }));
  EXPECT_EQ(LogBytes(follower_partition_dir), LogBytes(LeaderDir()));

  // The leader goes away: the fetcher backs off between attempts.
  const int port = port_;
  client_.reset();
  ASSERT_TRUE(broker_->Stop().ok());
  broker_.reset();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the failure is noticed
  const ReplicaFetcherStats before = fetchers.stats();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const ReplicaFetcherStats after = fetchers.stats();
  const uint64_t attempts = after.connect_attempts - before.connect_attempts;
  EXPECT_GE(attempts, 3u);   // it keeps trying, every backoff (100 ms)...
  EXPECT_LE(attempts, 20u);  // ...and no more often
  EXPECT_LE(after.fetch_requests - before.fetch_requests, 1u);

  // Back on the same dir and port: it resumes.
  StartBroker({{"listeners", "PLAINTEXT://127.0.0.1:" + std::to_string(port)}});
  ASSERT_EQ(port_, port);
  Produce(5, 20);
  ASSERT_TRUE(WaitFor([&] { return follower->log_end_offset() == Offset(produced_); }))
      << "follower LEO " << follower->log_end_offset().value() << " of " << produced_;
  EXPECT_EQ(LogBytes(follower_partition_dir), LogBytes(LeaderDir()));
  fetchers.Shutdown();
  fetchers.Shutdown();  // idempotent
  EXPECT_TRUE(follower->Close().ok());
}

// Reads every batch of `p` from `from` as bytes.
std::string BatchesOf(Partition& p, Offset from) {
  auto read = p.ReadForFollower(from, int64_t{1} << 30);
  EXPECT_TRUE(read.ok()) << read.status().ToString();
  if (!read.ok()) return {};
  std::string out(static_cast<size_t>(read->data.bytes), '\0');
  EXPECT_TRUE(ReadSlices(read->data.slices, reinterpret_cast<uint8_t*>(out.data())).ok());
  return out;
}

TEST(ReplicaFetcherDivergenceTest, RecordsOfAnEpochTheLeaderNeverHadAreTruncated) {
  headrace::testing::TempDir leader_dir, follower_dir;
  LeaderBroker leader(leader_dir.path(), kLeaderId, /*acks_all_fsync=*/true);
  ASSERT_TRUE(leader.Start());
  auto lp = leader.CreateTopic("t");
  ASSERT_TRUE(lp);
  for (int i = 0; i < 10; ++i) {  // epoch 0: offsets 0-99
    std::string b = ProducerBatch(10, "e0-");
    ASSERT_TRUE(lp->AppendAsLeader(MutableBytes(b), 1).ok());
  }
  ASSERT_TRUE(lp->BecomeLeader(LeaderEpoch(2), {kLeaderId, kFollowerId}, {kLeaderId, kFollowerId}).ok());
  for (int i = 0; i < 5; ++i) {  // epoch 2: offsets 100-149
    std::string b = ProducerBatch(10, "e2-");
    ASSERT_TRUE(lp->AppendAsLeader(MutableBytes(b), 1).ok());
  }

  // The follower had epoch 0's records, then 30 of its own in epoch 1 (a
  // leader that lost its leadership before they were replicated).
  auto fp = OpenFollower(follower_dir.path(), "t");
  ASSERT_TRUE(fp);
  ASSERT_TRUE(fp->BecomeFollower(LeaderEpoch(1), 9, {kFollowerId, 9}).ok());
  std::string common = BatchesOf(*lp, Offset(0)).substr(0, 0);
  {
    std::string all = BatchesOf(*lp, Offset(0));
    // The first ten batches (epoch 0) are a prefix of the leader's log.
    size_t pos = 0;
    for (int i = 0; i < 10; ++i) {
      auto h = ParseBatchHeader(std::span<const uint8_t>(
          reinterpret_cast<const uint8_t*>(all.data()) + pos, all.size() - pos));
      ASSERT_TRUE(h.ok());
      pos += static_cast<size_t>(h->total_size());
    }
    common = all.substr(0, pos);
  }
  ASSERT_TRUE(fp->AppendAsFollower(MutableBytes(common)).ok());
  for (int i = 0; i < 3; ++i) {
    std::string stale = LeaderWrittenBatch(100 + 10 * i, 10, 1, "stale-");
    ASSERT_TRUE(fp->AppendAsFollower(MutableBytes(stale)).ok());
  }
  ASSERT_EQ(fp->log_end_offset(), Offset(130));
  ASSERT_TRUE(fp->FlushLog().ok());

  ASSERT_TRUE(fp->BecomeFollower(LeaderEpoch(2), kLeaderId, {kLeaderId, kFollowerId}).ok());
  ReplicaFetcherManager fetchers(kFollowerId, TestConfig());
  fetchers.SetFollowed({{fp, kLeaderId, "127.0.0.1", leader.port()}});
  ASSERT_TRUE(WaitFor([&] {
    return fp->log_end_offset() == Offset(150) && lp->high_watermark() == Offset(150);
  })) << "follower LEO " << fp->log_end_offset().value() << ", leader HW "
      << lp->high_watermark().value();
  EXPECT_GE(fetchers.stats().epoch_requests, 1u);
  EXPECT_EQ(LogBytes(fp->dir()), LogBytes(lp->dir()));
  auto epochs = fp->epoch_entries();
  ASSERT_EQ(epochs.size(), 2u);
  EXPECT_EQ(epochs[0].epoch, LeaderEpoch(0));
  EXPECT_EQ(epochs[1].epoch, LeaderEpoch(2));
  EXPECT_EQ(epochs[1].start_offset, Offset(100));
  fetchers.Shutdown();
  EXPECT_TRUE(fp->Close().ok());
  lp.reset();
  leader.Stop();
}

// The first `batches` batches of `p` as bytes.
std::string FirstBatches(Partition& p, int batches) {
  std::string all = BatchesOf(p, p.log_start_offset());
  size_t pos = 0;
  for (int i = 0; i < batches; ++i) {
    auto h = ParseBatchHeader(std::span<const uint8_t>(
        reinterpret_cast<const uint8_t*>(all.data()) + pos, all.size() - pos));
    EXPECT_TRUE(h.ok());
    if (!h.ok()) break;
    pos += static_cast<size_t>(h->total_size());
  }
  return all.substr(0, pos);
}

void LeadBatches(Partition& p, int batches, int records) {
  for (int i = 0; i < batches; ++i) {
    std::string b = ProducerBatch(records);
    ASSERT_TRUE(p.AppendAsLeader(MutableBytes(b), 1).ok());
  }
}

TEST(ReplicaFetcherDivergenceTest, EpochsTheLeaderNeverHadAreAskedAgainOlderUntilTheyMatch) {
  // KIP-279: leader epochs {0: 0, 2: 50, 4: 80}; the follower has
  // {0: 0, 1: 50, 3: 70}. Asked for 3, the leader answers epoch 2 (ending at
  // 80), which the follower never had: it cuts to where its epoch 3 began
  // (70) and asks for 1; the leader answers epoch 0 ending at 50: cut there.
  headrace::testing::TempDir leader_dir, follower_dir;
  LeaderBroker leader(leader_dir.path(), kLeaderId, /*acks_all_fsync=*/true);
  ASSERT_TRUE(leader.Start());
  auto lp = leader.CreateTopic("t");
  ASSERT_TRUE(lp);
  const std::vector<int32_t> both = {kLeaderId, kFollowerId};
  LeadBatches(*lp, 5, 10);
  ASSERT_TRUE(lp->BecomeLeader(LeaderEpoch(2), both, both).ok());
  LeadBatches(*lp, 3, 10);
  ASSERT_TRUE(lp->BecomeLeader(LeaderEpoch(4), both, both).ok());
  LeadBatches(*lp, 2, 10);

  auto fp = OpenFollower(follower_dir.path(), "t");
  ASSERT_TRUE(fp);
  ASSERT_TRUE(fp->BecomeFollower(LeaderEpoch(3), 9, {kFollowerId, 9}).ok());
  std::string common = FirstBatches(*lp, 5);
  ASSERT_TRUE(fp->AppendAsFollower(MutableBytes(common)).ok());
  for (int i = 0; i < 2; ++i) {
    std::string stale = LeaderWrittenBatch(50 + 10 * i, 10, 1, "e1-");
    ASSERT_TRUE(fp->AppendAsFollower(MutableBytes(stale)).ok());
  }
  std::string stale3 = LeaderWrittenBatch(70, 5, 3, "e3-");
  ASSERT_TRUE(fp->AppendAsFollower(MutableBytes(stale3)).ok());
  ASSERT_EQ(fp->epoch_entries().size(), 3u);

  ASSERT_TRUE(fp->BecomeFollower(LeaderEpoch(4), kLeaderId, both).ok());
  ReplicaFetcherManager fetchers(kFollowerId, TestConfig());
  fetchers.SetFollowed({{fp, kLeaderId, "127.0.0.1", leader.port()}});
  ASSERT_TRUE(WaitFor([&] {
    return fp->log_end_offset() == Offset(100) && lp->high_watermark() == Offset(100);
  })) << "follower LEO " << fp->log_end_offset().value();
  EXPECT_GE(fetchers.stats().epoch_requests, 2u);
  EXPECT_EQ(LogBytes(fp->dir()), LogBytes(lp->dir()));
  auto epochs = fp->epoch_entries();
  ASSERT_EQ(epochs.size(), 3u);
  EXPECT_EQ(epochs[1].epoch, LeaderEpoch(2));
  EXPECT_EQ(epochs[1].start_offset, Offset(50));
  EXPECT_EQ(epochs[2].epoch, LeaderEpoch(4));
  EXPECT_EQ(epochs[2].start_offset, Offset(80));
  fetchers.Shutdown();
  EXPECT_TRUE(fp->Close().ok());
  lp.reset();
  leader.Stop();
}

TEST(ReplicaFetcherBackoffTest, ALeaderBehindTheFollowersEpochIsRetriedSoonNotInALoop) {
  headrace::testing::TempDir leader_dir, follower_dir;
  LeaderBroker leader(leader_dir.path(), kLeaderId, /*acks_all_fsync=*/false);
  ASSERT_TRUE(leader.Start());
  auto lp = leader.CreateTopic("t");
  ASSERT_TRUE(lp);
  const std::vector<int32_t> both = {kLeaderId, kFollowerId};
  ASSERT_TRUE(lp->BecomeLeader(LeaderEpoch(3), both, both).ok());
  LeadBatches(*lp, 4, 10);
  auto fp = OpenFollower(follower_dir.path(), "t");
  ASSERT_TRUE(fp);
  // The follower heard of epoch 4 before the leader did: UNKNOWN_LEADER_EPOCH.
  ASSERT_TRUE(fp->BecomeFollower(LeaderEpoch(4), kLeaderId, both).ok());
  ReplicaFetcherManager fetchers(kFollowerId, TestConfig());  // backoff 100 ms
  fetchers.SetFollowed({{fp, kLeaderId, "127.0.0.1", leader.port()}});
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  const ReplicaFetcherStats s = fetchers.stats();
  // A leader behind the view is retried every kViewLagRetryMs (50 ms).
  EXPECT_GE(s.epoch_requests, 8u);   // retried soon...
  EXPECT_LE(s.epoch_requests, 25u);  // ...but not in a loop
  EXPECT_EQ(s.connect_attempts, 1u);  // partition errors keep the connection
  EXPECT_EQ(fp->log_end_offset(), Offset(0));
  ASSERT_TRUE(lp->BecomeLeader(LeaderEpoch(4), both, both).ok());  // the leader catches up
  ASSERT_TRUE(WaitFor([&] { return fp->log_end_offset() == Offset(40); }));
  EXPECT_EQ(LogBytes(fp->dir()), LogBytes(lp->dir()));
  fetchers.Shutdown();
  EXPECT_TRUE(fp->Close().ok());
  lp.reset();
  leader.Stop();
}

TEST(ReplicaFetcherStopTest, StoppingDoesNotWaitOutALongPoll) {
  headrace::testing::TempDir leader_dir, follower_dir;
  LeaderBroker leader(leader_dir.path(), kLeaderId, /*acks_all_fsync=*/false);
  ASSERT_TRUE(leader.Start());
  auto lp = leader.CreateTopic("t");
  ASSERT_TRUE(lp);
  LeadBatches(*lp, 2, 10);
  auto fp = OpenFollower(follower_dir.path(), "t");
  ASSERT_TRUE(fp);
  ASSERT_TRUE(fp->BecomeFollower(LeaderEpoch(0), kLeaderId, {kLeaderId, kFollowerId}).ok());
  ReplicaFetcherConfig config = TestConfig();
  config.fetch_wait_max_ms = 10000;  // a caught-up follower's fetch waits this long
  auto fetchers = std::make_unique<ReplicaFetcherManager>(kFollowerId, config);
  fetchers->SetFollowed({{fp, kLeaderId, "127.0.0.1", leader.port()}});
  ASSERT_TRUE(WaitFor([&] { return fp->log_end_offset() == Offset(20); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // parked on the leader now
  auto start = std::chrono::steady_clock::now();
  fetchers->SetFollowed({});  // the leader's fetcher is stopped: its socket interrupted
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  fetchers->SetFollowed({{fp, kLeaderId, "127.0.0.1", leader.port()}});
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  start = std::chrono::steady_clock::now();
  fetchers.reset();  // Shutdown
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_TRUE(fp->Close().ok());
  lp.reset();
  leader.Stop();
}

TEST(ReplicaFetcherFairnessTest, WhenOneAnswerHoldsOneBatchEveryPartitionComesFirstInTurn) {
  // Three partitions from one leader, each 30 batches behind, and answers
  // that hold one batch (the first partition's first batch goes over any
  // limit): a fetcher asking in a fixed order would copy one partition to
  // its end before the next got anything.
  headrace::testing::TempDir leader_dir, follower_dir;
  LeaderBroker leader(leader_dir.path(), kLeaderId, /*acks_all_fsync=*/false);
  ASSERT_TRUE(leader.Start());
  constexpr int kBatches = 30, kRecords = 10;
  const Offset end(kBatches * kRecords);
  std::vector<std::shared_ptr<Partition>> leaders;
  std::vector<FollowedPartition> followed;
  for (const char* topic : {"a", "b", "c"}) {
    leaders.push_back(leader.CreateTopic(topic));
    ASSERT_TRUE(leaders.back());
    LeadBatches(*leaders.back(), kBatches, kRecords);
    auto fp = OpenFollower(follower_dir.path(), topic);
    ASSERT_TRUE(fp);
    ASSERT_TRUE(fp->BecomeFollower(LeaderEpoch(0), kLeaderId, {kLeaderId, kFollowerId}).ok());
    followed.push_back({fp, kLeaderId, "127.0.0.1", leader.port()});
  }
  ReplicaFetcherConfig config = TestConfig();
  config.fetch_response_max_bytes = 1;
  ReplicaFetcherManager fetchers(kFollowerId, config);
  fetchers.SetFollowed(followed);
  // Once one partition is complete, the others are most of the way. They
  // are read after it is seen complete, so no figure is older than that
  // moment (a thread preempted between reads only makes them later).
  std::vector<Offset> at_first_complete;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (at_first_complete.empty() && std::chrono::steady_clock::now() < give_up) {
    for (const auto& complete : followed) {
      if (complete.partition->log_end_offset() != end) continue;
      for (const auto& f : followed) at_first_complete.push_back(f.partition->log_end_offset());
      break;
    }
  }
  ASSERT_FALSE(at_first_complete.empty()) << "no partition caught up";
  for (size_t i = 0; i < at_first_complete.size(); ++i) {
    EXPECT_GE(at_first_complete[i].value(), (kBatches - 3) * kRecords) << "partition " << i;
  }
  for (const auto& f : followed) {
    ASSERT_TRUE(WaitFor([&] { return f.partition->log_end_offset() == end; }));
  }
  for (size_t i = 0; i < followed.size(); ++i) {
    EXPECT_EQ(LogBytes(followed[i].partition->dir()), LogBytes(leaders[i]->dir()));
  }
  fetchers.Shutdown();
  for (const auto& f : followed) EXPECT_TRUE(f.partition->Close().ok());
  leaders.clear();
  leader.Stop();
}

TEST(ReplicaFetcherLogStartTest, AFollowerBelowTheLeadersLogStartStartsOverThere) {
  headrace::testing::TempDir leader_dir, follower_dir;
  LeaderBroker leader(leader_dir.path(), kLeaderId, /*acks_all_fsync=*/false);
  ASSERT_TRUE(leader.Start());
  auto lp = leader.CreateTopic("t");
  ASSERT_TRUE(lp);
  for (int i = 0; i < 10; ++i) {
    std::string b = ProducerBatch(10);
    ASSERT_TRUE(lp->AppendAsLeader(MutableBytes(b), 1).ok());
  }
  ASSERT_TRUE(lp->DeleteRecordsBefore(Offset(65)).ok());  // inside the batch 60-69
  auto fp = OpenFollower(follower_dir.path(), "t");
  ASSERT_TRUE(fp);
  ASSERT_TRUE(fp->BecomeFollower(LeaderEpoch(0), kLeaderId, {kLeaderId, kFollowerId}).ok());
  ReplicaFetcherManager fetchers(kFollowerId, TestConfig());
  fetchers.SetFollowed({{fp, kLeaderId, "127.0.0.1", leader.port()}});
  ASSERT_TRUE(WaitFor([&] { return fp->log_end_offset() == Offset(100); }))
      << "follower LEO " << fp->log_end_offset().value();
  EXPECT_EQ(fp->log_start_offset(), Offset(60));  // the batch holding the leader's start
  EXPECT_EQ(BatchesOf(*fp, Offset(60)), BatchesOf(*lp, Offset(65)));
  // Nothing followed any more: the fetcher stops fetching.
  fetchers.SetFollowed({});
  const uint64_t fetches = fetchers.stats().fetch_requests;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_LE(fetchers.stats().fetch_requests, fetches + 1);
  fetchers.Shutdown();
  EXPECT_TRUE(fp->Close().ok());
  lp.reset();
  leader.Stop();
}

}  // namespace
}  // namespace headrace::broker::replication
