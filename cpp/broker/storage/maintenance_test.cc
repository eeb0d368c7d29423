#include "broker/storage/maintenance.h"

#include <gtest/gtest.h>

#include <atomic>

#include <thread>

#include "broker/partition/fake_log_test_util.h"
#include "headrace/record_batch.h"

namespace headrace::broker {
namespace {

using namespace std::chrono_literals;
using testing::FakeLog;

// Counts the partitions the maintenance thread hands to the flusher.
struct CountingScheduler : FlushScheduler {
  std::atomic<int> scheduled{0};
  void Schedule(std::shared_ptr<Partition>) override { ++scheduled; }
};

std::shared_ptr<Partition> MakePartition(FakeLog** raw, FlushScheduler* flusher = nullptr) {
  auto log = std::make_unique<FakeLog>();
  *raw = log.get();
  PartitionServices services;
  services.flusher = flusher;
  return std::make_shared<Partition>(TopicPartition{"t", 0}, Uuid::Random(), std::move(log),
                                     TopicSettings{}, services);
}

TEST(MaintenanceTest, RunOnceRollsFlushesAndAppliesRetentionWhenDue) {
  FakeLog* log;
  CountingScheduler flusher;
  auto p = MakePartition(&log, &flusher);
  auto r = Maintenance::RunOnce({p}, TimestampMs(1000), /*apply_retention=*/false);
  EXPECT_EQ(r.partitions, 1);
  EXPECT_EQ(r.errors, 0);
  EXPECT_EQ(log->roll_checks(), 1);
  EXPECT_EQ(flusher.scheduled.load(), 0);  // nothing unflushed
  std::string b = testing::FakeBatch(2);
  ASSERT_TRUE(p->AppendAsLeader({reinterpret_cast<uint8_t*>(b.data()), b.size()}).ok());
  EXPECT_EQ(flusher.scheduled.load(), 0);  // flush policy not due
  log->flush_due = true;                   // flush.ms passed
  Maintenance::RunOnce({p}, TimestampMs(1000), /*apply_retention=*/false);
  EXPECT_EQ(flusher.scheduled.load(), 1);  // handed to the flusher, not fsynced here
  EXPECT_EQ(log->flushes(), 0);
  EXPECT_EQ(log->retention_runs(), 0);
  Maintenance::RunOnce({p}, TimestampMs(2000), /*apply_retention=*/true);
  EXPECT_EQ(log->retention_runs(), 1);
}

TEST(MaintenanceTest, ThreadTicksAndRunsRetentionOnItsOwnInterval) {
  FakeLog* log;
  auto p = MakePartition(&log);
  Maintenance::Options opts;
  opts.tick_ms = 10;
  opts.retention_check_ms = 60;
  Maintenance m(opts, [p] { return std::vector<std::shared_ptr<Partition>>{p}; });
  m.Start();
  std::this_thread::sleep_for(200ms);
  m.Stop();
  int passes = m.passes();
  EXPECT_GE(passes, 5);
  EXPECT_EQ(log->roll_checks(), passes);
  EXPECT_GE(log->retention_runs(), 1);
  EXPECT_LT(log->retention_runs(), passes);
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(m.passes(), passes);  // stopped
}

TEST(MaintenanceTest, RetentionPassForgetsIdleProducers) {
  FakeLog* log;
  auto p = MakePartition(&log);
  BatchProducerFields f;
  f.producer_id = 42;
  f.producer_epoch = 0;
  f.base_sequence = 0;
  std::string b = BuildBatch({{std::nullopt, "v", {}, TimestampMs(1000)}}, f);
  ASSERT_TRUE(p->AppendAsLeader({reinterpret_cast<uint8_t*>(b.data()), b.size()}).ok());
  ASSERT_EQ(p->DescribeProducers().size(), 1u);
  // Only the retention pass expires producers, and only idle ones.
  EXPECT_EQ(Maintenance::RunOnce({p}, TimestampMs(5000), false, 1000).producers_expired, 0);
  EXPECT_EQ(Maintenance::RunOnce({p}, TimestampMs(1500), true, 1000).producers_expired, 0);
  EXPECT_EQ(Maintenance::RunOnce({p}, TimestampMs(5000), true, 1000).producers_expired, 1);
  EXPECT_TRUE(p->DescribeProducers().empty());
}

}  // namespace
}  // namespace headrace::broker
