// The high-watermark checkpoint (hw_checkpoint.h): Kafka's
// replication-offset-checkpoint format, its atomic write through the I/O
// seam, the per-directory write, and a partition's HW at start
// (Partition::StartHighWatermarkAt) and at BecomeLeader.
#include "broker/storage/hw_checkpoint.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "broker/storage/log_dirs.h"
#include "broker/storage/maintenance.h"
#include "broker/partition/partition.h"
#include "broker/partition/partition_test_util.h"
#include "broker/topics/topic_registry.h"
#include "common/fault_injecting_env.h"
#include "log/testing.h"

namespace headrace::broker {
namespace {

namespace fs = std::filesystem;
using testing::MutableBytes;
using testing::ProducerBatch;

std::string Slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(HwCheckpointFormat, RoundTripsInKafkasTextFormat) {
  HwCheckpoint cp{{{"orders", 0}, Offset(17)}, {{"orders", 1}, Offset(0)},
                  {{"__consumer_offsets", 42}, Offset(123456789012)}};
  std::string text = FormatHwCheckpoint(cp);
  EXPECT_EQ(text, "0\n3\n__consumer_offsets 42 123456789012\norders 0 17\norders 1 0\n");
  auto back = ParseHwCheckpoint(text, "f");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, cp);
  auto empty = ParseHwCheckpoint(FormatHwCheckpoint({}), "f");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(HwCheckpointFormat, GarbledFilesAreCorruption) {
  for (const char* bad : {"", "1\n0\n", "0\n-1\n", "0\n2\nt 0 5\n", "0\n1\nt x 5\n",
                          "0\n1\nt 0 -3\n", "0\n1\nt 0 5\nextra\n", "0\n1\nt -1 5\n"}) {
    auto r = ParseHwCheckpoint(bad, "/d/replication-offset-checkpoint");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kCorruption) << bad;
    EXPECT_NE(r.status().message().find("/d/replication-offset-checkpoint"), std::string::npos);
  }
}

TEST(HwCheckpointFile, MissingIsEmptyAndWritesAreAtomicThroughTheSeam) {
  headrace::testing::TempDir dir;
  FaultInjectingEnv env(FileEnv::Default());
  auto none = ReadHwCheckpoint(env, dir.path());
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());

  HwCheckpoint first{{{"t", 0}, Offset(5)}};
  ASSERT_TRUE(WriteHwCheckpoint(env, dir.path(), first).ok());
  EXPECT_EQ(Slurp(fs::path(dir.path()) / kHwCheckpointName), "0\n1\nt 0 5\n");

  // Each step of the replacement failing leaves the old file whole.
  HwCheckpoint second{{{"t", 0}, Offset(9)}, {{"t", 1}, Offset(3)}};
  std::vector<FaultRule> rules(4);
  rules[0].op = FileOp::kWrite;
  rules[0].short_write = true;  // half the temp file, then ENOSPC
  rules[0].err = ENOSPC;
  rules[1].op = FileOp::kSync;  // the temp file's fsync
  rules[2].op = FileOp::kRename;
  rules[3].op = FileOp::kOpen;
  for (FaultRule& rule : rules) {
    rule.path_substr = kHwCheckpointName;
    env.ClearRules();
    env.AddRule(rule);
    EXPECT_FALSE(WriteHwCheckpoint(env, dir.path(), second).ok()) << FaultRuleToString(rule);
    env.ClearRules();
    auto read = ReadHwCheckpoint(env, dir.path());
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    EXPECT_EQ(*read, first) << FaultRuleToString(rule);
  }
  ASSERT_TRUE(WriteHwCheckpoint(env, dir.path(), second).ok());
  auto read = ReadHwCheckpoint(env, dir.path());
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(*read, second);
}

class HwCheckpointPartitionTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (auto& p : parts_) (void)p->Close();
  }
  std::shared_ptr<Partition> Open(const std::string& data_dir, TopicPartition tp,
                                  int32_t broker = 0) {
    PartitionServices services;
    services.local_broker_id = broker;
    auto opened = Partition::Open(data_dir, tp, Uuid::Random(), TopicSettings{}, services);
    EXPECT_TRUE(opened.ok()) << opened.status().ToString();
    if (!opened.ok()) return nullptr;
    parts_.push_back(*opened);
    return *opened;
  }
  void Lead(Partition& p, int records) {
    std::string b = ProducerBatch(records);
    ASSERT_TRUE(p.AppendAsLeader(MutableBytes(b), 1).ok());
  }
  // A partition holding `records` records, closed and opened again (the
  // constructor's HW is then its LEO).
  std::shared_ptr<Partition> Reopened(int records, int32_t broker = 0) {
    auto p = Open(dir_.path(), {"t", 0}, broker);
    Lead(*p, records);
    EXPECT_TRUE(p->Close().ok());
    parts_.clear();
    p = Open(dir_.path(), {"t", 0}, broker);
    EXPECT_EQ(p->high_watermark(), Offset(records));
    return p;
  }
  headrace::testing::TempDir dir_;
  headrace::testing::TempDir second_;  // a second log directory
  std::vector<std::shared_ptr<Partition>> parts_;
};

TEST_F(HwCheckpointPartitionTest, StartsAtTheCheckpointBoundedByTheLogEnd) {
  auto p = Reopened(10);
  p->StartHighWatermarkAt(Offset(4));
  EXPECT_EQ(p->high_watermark(), Offset(4));
  EXPECT_EQ(p->last_stable_offset(), Offset(4));
  // Nothing at or past the checkpointed HW is visible.
  auto read = p->Read(Offset(4), 1 << 20, IsolationLevel::kReadUncommitted);
  ASSERT_TRUE(read.ok());
  EXPECT_TRUE(read->data.slices.empty());
  EXPECT_EQ(read->high_watermark, Offset(4));
  // Never above the log end; 0 (no entry) as Kafka.
  p->StartHighWatermarkAt(Offset(50));
  EXPECT_EQ(p->high_watermark(), Offset(10));
  p->StartHighWatermarkAt(Offset(0));
  EXPECT_EQ(p->high_watermark(), Offset(0));
}

TEST_F(HwCheckpointPartitionTest, LeaderOfIsrSelfRecomputesAtBecomeLeader) {
  auto p = Reopened(10);
  p->StartHighWatermarkAt(Offset(3));
  ASSERT_TRUE(p->BecomeFollower(LeaderEpoch(1), 1, {0, 1}).ok());
  EXPECT_EQ(p->high_watermark(), Offset(3));
  // Followers in the ISR: the HW waits for their fetches.
  ASSERT_TRUE(p->BecomeLeader(LeaderEpoch(2), {0, 1}, {0, 1}).ok());
  EXPECT_EQ(p->high_watermark(), Offset(3));
  // The ISR is only itself: everything it has is committed at once.
  ASSERT_TRUE(p->BecomeLeader(LeaderEpoch(3), {0, 1}, {0}).ok());
  EXPECT_EQ(p->high_watermark(), Offset(10));
}

TEST_F(HwCheckpointPartitionTest, RfOneLeaderRecomputesWithoutAProduce) {
  auto p = Reopened(6);
  p->StartHighWatermarkAt(Offset(0));
  ASSERT_TRUE(p->BecomeLeader(LeaderEpoch(1), {0}, {0}).ok());
  EXPECT_EQ(p->high_watermark(), Offset(6));
}

TEST_F(HwCheckpointPartitionTest, EachOnlineDirectoryGetsItsPartitionsHighWatermarks) {
  LogDirs::Options o;
  o.paths = {dir_.path(), second_.path()};
  o.lock = false;
  auto dirs = LogDirs::Open(std::move(o));
  ASSERT_TRUE(dirs.ok()) << dirs.status().ToString();
  auto a0 = Open((*dirs)->path(0), {"a", 0});
  auto a1 = Open((*dirs)->path(1), {"a", 1});
  auto b0 = Open((*dirs)->path(1), {"b", 0});
  Lead(*a0, 3);
  Lead(*a1, 5);
  ASSERT_TRUE(b0->BecomeLeader(LeaderEpoch(1), {0, 1}, {0, 1}).ok());
  Lead(*b0, 4);  // HW stays 0: broker 1 has not fetched
  ASSERT_TRUE(CheckpointHighWatermarks(**dirs, {a0, a1, b0}).ok());
  auto first = ReadHwCheckpoint(*FileEnv::Default(), (*dirs)->path(0));
  auto other = ReadHwCheckpoint(*FileEnv::Default(), (*dirs)->path(1));
  ASSERT_TRUE(first.ok() && other.ok());
  EXPECT_EQ(*first, (HwCheckpoint{{{"a", 0}, Offset(3)}}));
  EXPECT_EQ(*other, (HwCheckpoint{{{"a", 1}, Offset(5)}, {{"b", 0}, Offset(0)}}));
  // An offline partition is left out.
  a1->TakeOffline();
  ASSERT_TRUE(CheckpointHighWatermarks(**dirs, {a0, a1, b0}).ok());
  other = ReadHwCheckpoint(*FileEnv::Default(), (*dirs)->path(1));
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(*other, (HwCheckpoint{{{"b", 0}, Offset(0)}}));
}

// The wiring: a cluster-mode registry opens each replica with the HW its
// directory's checkpoint holds (bounded by the LEO; 0 without an entry); a
// single node keeps its HW at the log end.
class HwCheckpointRegistryTest : public ::testing::Test {
 protected:
  void TearDown() override { registry_.reset(); }
  void Open(bool cluster) {
    registry_.reset();
    store_.reset();
    BrokerConfig config;
    config.data_dir = dir_.path();
    config.node_id = 1;
    if (cluster) config.zookeeper_connect = "127.0.0.1:1";  // never dialled here
    auto store = FileMetadataStore::Open(dir_.path());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
    TopicRegistry::Options o;
    o.config = config;
    o.store = store_.get();
    o.services.local_broker_id = 1;
    auto r = TopicRegistry::Open(std::move(o));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    registry_ = std::move(r).value();
  }
  std::shared_ptr<Partition> Replica(int32_t partition) {
    auto p = registry_->EnsureReplica("t", id_, {}, 3, partition);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return p.ok() ? *p : nullptr;
  }
  headrace::testing::TempDir dir_;
  Uuid id_ = Uuid::Random();
  std::unique_ptr<FileMetadataStore> store_;
  std::unique_ptr<TopicRegistry> registry_;
};

TEST_F(HwCheckpointRegistryTest, ClusterReplicasStartAtTheCheckpointedHighWatermark) {
  Open(/*cluster=*/true);
  for (int32_t i = 0; i < 3; ++i) {
    auto p = Replica(i);
    ASSERT_TRUE(p);
    ASSERT_TRUE(p->BecomeLeader(LeaderEpoch(1), {1}, {1}).ok());
    std::string b = ProducerBatch(10);
    ASSERT_TRUE(p->AppendAsLeader(MutableBytes(b), 1).ok());
    ASSERT_TRUE(p->FlushLog().ok());
    EXPECT_EQ(p->high_watermark(), Offset(10));
  }
  registry_.reset();
  // t-0 committed 4 of its 10, t-1's checkpoint is ahead of its log, t-2 has none.
  ASSERT_TRUE(WriteHwCheckpoint(*FileEnv::Default(), dir_.path(),
                                {{{"t", 0}, Offset(4)}, {{"t", 1}, Offset(99)}})
                  .ok());
  Open(/*cluster=*/true);
  auto topic = registry_->FindTopic("t");
  ASSERT_TRUE(topic);
  ASSERT_EQ(topic->partition_count(), 3);
  EXPECT_EQ(topic->partitions[0]->high_watermark(), Offset(4));
  EXPECT_EQ(topic->partitions[1]->high_watermark(), Offset(10));
  EXPECT_EQ(topic->partitions[2]->high_watermark(), Offset(0));
  // Led again with an ISR of itself: everything it has is committed at once.
  ASSERT_TRUE(topic->partitions[0]->BecomeLeader(LeaderEpoch(2), {1}, {1}).ok());
  EXPECT_EQ(topic->partitions[0]->high_watermark(), Offset(10));
  // What the next periodic write records.
  ASSERT_TRUE(CheckpointHighWatermarks(registry_->log_dirs(), registry_->AllPartitions()).ok());
  auto cp = ReadHwCheckpoint(*FileEnv::Default(), dir_.path());
  ASSERT_TRUE(cp.ok());
  EXPECT_EQ(*cp, (HwCheckpoint{{{"t", 0}, Offset(10)}, {{"t", 1}, Offset(10)},
                               {{"t", 2}, Offset(0)}}));
}

TEST_F(HwCheckpointRegistryTest, SingleNodeKeepsItsHighWatermarkAtTheLogEnd) {
  Open(/*cluster=*/false);
  CreateTopicRequest req;
  req.name = "s";
  req.num_partitions = 1;
  ASSERT_TRUE(registry_->CreateTopic(req).ok());
  auto p = registry_->FindTopic("s")->partitions[0];
  std::string b = ProducerBatch(7);
  ASSERT_TRUE(p->AppendAsLeader(MutableBytes(b), 1).ok());
  p.reset();
  registry_.reset();
  // A stray file is not read: a single node's HW is its fsync point.
  ASSERT_TRUE(WriteHwCheckpoint(*FileEnv::Default(), dir_.path(), {{{"s", 0}, Offset(2)}}).ok());
  Open(/*cluster=*/false);
  EXPECT_EQ(registry_->FindTopic("s")->partitions[0]->high_watermark(), Offset(7));
}

TEST(HwCheckpointMaintenance, TheMaintenanceThreadRunsTheCheckpointOnItsInterval) {
  std::mutex mu;
  std::condition_variable cv;
  int calls = 0;
  Maintenance::Options o;
  o.tick_ms = 5;
  o.hw_checkpoint_ms = 20;
  o.checkpoint_hw = [&] {
    std::lock_guard<std::mutex> lock(mu);
    ++calls;
    cv.notify_all();
    return calls == 1 ? Status::IOError("first one fails") : Status::OK();
  };
  Maintenance m(o, [] { return std::vector<std::shared_ptr<Partition>>{}; });
  const auto started = std::chrono::steady_clock::now();
  m.Start();
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return calls >= 3; }));
  }
  m.Stop();
  // A failed checkpoint does not stop the next ones, and they come no more
  // often than the interval: at most one per 20 ms elapsed.
  const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - started);
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_LE(calls, elapsed.count() / 20 + 1);
  EXPECT_GT(m.passes(), calls);  // the other passes did not checkpoint
}

}  // namespace
}  // namespace headrace::broker
