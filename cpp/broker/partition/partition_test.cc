#include "broker/partition/partition.h"

#include <gtest/gtest.h>

#include <atomic>

#include "broker/partition/fake_log_test_util.h"
#include "broker/base/kafka_error.h"

namespace headrace::broker {
namespace {

using testing::FakeBatch;
using testing::FakeLog;

// Counts notifications that moved the high watermark, and state changes.
struct CountingListener : PartitionListener {
  std::atomic<int> calls{0}, state_changes{0};
  void OnWatermarksAdvanced(Partition&, WatermarkSet changed) override {
    if (changed & WatermarkBit(Watermark::kHighWatermark)) ++calls;
  }
  void OnStateChanged(Partition&) override { ++state_changes; }
};

std::shared_ptr<Partition> MakePartition(FakeLog** raw, PartitionListener* listener = nullptr) {
  auto log = std::make_unique<FakeLog>();
  *raw = log.get();
  PartitionServices services;
  services.listener = listener;
  return std::make_shared<Partition>(TopicPartition{"t", 0}, Uuid::Random(), std::move(log),
                                     TopicSettings{}, services);
}

Status AppendRecords(Partition& p, int records) {
  std::string b = FakeBatch(records);
  auto r = p.AppendAsLeader({reinterpret_cast<uint8_t*>(b.data()), b.size()});
  return r.ok() ? Status::OK() : r.status();
}

TEST(PartitionTest, AppendAdvancesHighWatermarkAndNotifies) {
  CountingListener listener;
  FakeLog* log;
  auto p = MakePartition(&log, &listener);
  EXPECT_EQ(p->high_watermark(), Offset(0));
  std::string b = FakeBatch(3);
  b[12] = b[13] = b[14] = b[15] = '\xff';  // epoch -1, as producers send it
  auto info = p->AppendAsLeader({reinterpret_cast<uint8_t*>(b.data()), b.size()});
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->base_offset, Offset(0));
  EXPECT_EQ(info->last_offset, Offset(2));
  EXPECT_EQ(p->log_end_offset(), Offset(3));
  EXPECT_EQ(p->high_watermark(), Offset(3));
  EXPECT_EQ(p->leader_epoch(), LeaderEpoch(0));
  EXPECT_EQ(listener.calls.load(), 1);
  // The leader epoch (bytes 12..16) was stamped with 0.
  EXPECT_EQ(b[12] | b[13] | b[14] | b[15], 0);
}

TEST(PartitionTest, FailedAppendChangesNothing) {
  CountingListener listener;
  FakeLog* log;
  auto p = MakePartition(&log, &listener);
  std::string junk(10, 'x');
  auto r = p->AppendAsLeader({reinterpret_cast<uint8_t*>(junk.data()), junk.size()});
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(ToKafkaError(r.status()), KafkaError::kCorruptMessage);
  EXPECT_EQ(p->high_watermark(), Offset(0));
  EXPECT_EQ(listener.calls.load(), 0);
}

TEST(PartitionTest, ReadsAreBoundedAndReportOffsets) {
  FakeLog* log;
  auto p = MakePartition(&log);
  ASSERT_TRUE(AppendRecords(*p, 2).ok());
  ASSERT_TRUE(AppendRecords(*p, 3).ok());
  auto r = p->Read(Offset(0), 1 << 20, IsolationLevel::kReadUncommitted);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->data.slices.size(), 2u);
  EXPECT_EQ(r->high_watermark, Offset(5));
  EXPECT_EQ(r->last_stable_offset, Offset(5));
  EXPECT_EQ(r->log_start_offset, Offset(0));

  auto at_end = p->Read(Offset(5), 1 << 20, IsolationLevel::kReadCommitted);
  ASSERT_TRUE(at_end.ok());
  EXPECT_TRUE(at_end->data.slices.empty());

  auto past = p->Read(Offset(6), 1 << 20, IsolationLevel::kReadUncommitted);
  EXPECT_EQ(ToKafkaError(past.status()), KafkaError::kOffsetOutOfRange);
  auto one = p->Read(Offset(3), 1, IsolationLevel::kReadUncommitted);  // min one batch
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->data.slices.size(), 1u);
  EXPECT_EQ(one->data.first_batch_base, Offset(2));
}

TEST(PartitionTest, ListOffsetsEarliestLatestAndDeleteRecords) {
  FakeLog* log;
  auto p = MakePartition(&log);
  ASSERT_TRUE(AppendRecords(*p, 4).ok());
  auto latest = p->ListOffset(kListOffsetsLatest, IsolationLevel::kReadUncommitted);
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(latest->offset, Offset(4));
  EXPECT_EQ(latest->timestamp, kNoTimestamp);
  EXPECT_EQ(p->ListOffset(kListOffsetsEarliest, IsolationLevel::kReadUncommitted)->offset, Offset(0));
  // Nothing by time / max timestamp in the fake log: Kafka's "unknown" answer.
  EXPECT_EQ(p->ListOffset(1000, IsolationLevel::kReadUncommitted)->offset, Offset(-1));
  EXPECT_EQ(p->ListOffset(kListOffsetsMaxTimestamp, IsolationLevel::kReadUncommitted)->offset,
            Offset(-1));
  EXPECT_FALSE(p->ListOffset(-7, IsolationLevel::kReadUncommitted).ok());

  auto start = p->DeleteRecordsBefore(Offset(2));
  ASSERT_TRUE(start.ok());
  EXPECT_EQ(start.value(), Offset(2));
  EXPECT_EQ(p->ListOffset(kListOffsetsEarliest, IsolationLevel::kReadUncommitted)->offset, Offset(2));
  EXPECT_EQ(ToKafkaError(p->DeleteRecordsBefore(Offset(5)).status()), KafkaError::kOffsetOutOfRange);
  EXPECT_EQ(p->DeleteRecordsBefore(Offset(-1)).value(), Offset(4));  // -1 = high watermark
}

TEST(PartitionTest, RetentionFollowsCleanupPolicy) {
  FakeLog* log;
  auto p = MakePartition(&log);
  ASSERT_TRUE(p->ApplyRetention(TimestampMs(1)).ok());
  EXPECT_EQ(log->retention_runs(), 1);
  TopicSettings compact_only;
  compact_only.cleanup_delete = false;
  compact_only.cleanup_compact = true;
  compact_only.log.retention_ms = 42;
  p->SetSettings(compact_only);
  ASSERT_TRUE(p->ApplyRetention(TimestampMs(1)).ok());
  EXPECT_EQ(log->retention_runs(), 1);  // skipped
  EXPECT_EQ(log->config().retention_ms, 42);
}

TEST(PartitionTest, AppendAfterCloseMapsToNotLeader) {
  FakeLog* log;
  auto p = MakePartition(&log);
  ASSERT_TRUE(p->Close().ok());
  EXPECT_EQ(ToKafkaError(AppendRecords(*p, 1)), KafkaError::kNotLeaderOrFollower);
}

}  // namespace
}  // namespace headrace::broker
