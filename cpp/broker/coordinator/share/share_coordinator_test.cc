// The share coordinator over its real log (flushed by a real Flusher): the
// records' bytes, merging writes, epochs, replay after reopening,
// compaction and deleting a group's or some keys' states.
#include "broker/coordinator/share/share_coordinator.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

#include "broker/partition/flusher.h"
#include "broker/partition/purgatory.h"

namespace headrace::broker::share {
namespace {

namespace fs = std::filesystem;

Uuid Topic(uint8_t b) {
  Uuid u;
  u.bytes.fill(b);
  return u;
}

TEST(ShareStateRecordsTest, KeyAndValueRoundTripInKafkasLayout) {
  const SharePartitionKey key{"g", Topic(7), 3};
  const std::string k = EncodeShareStateKey(key);
  // int16 0, string "g", 16 uuid bytes, int32 3.
  ASSERT_EQ(k.size(), 2u + 2 + 1 + 16 + 4);
  EXPECT_EQ(k.substr(0, 5), std::string("\0\0\0\1g", 5));
  auto dk = DecodeShareStateKey(k);
  ASSERT_TRUE(dk.ok());
  EXPECT_EQ(*dk, key);

  ShareState s;
  s.snapshot_epoch = 4;
  s.state_epoch = 2;
  s.leader_epoch = 9;
  s.start_offset = 100;
  s.batches = {{100, 104, RecordState::kAcknowledged, 1},
               {105, 105, RecordState::kAvailable, 3},
               {107, 110, RecordState::kArchived, 5}};
  const std::string v = EncodeShareStateValue(s);
  // int16 + uint16 + int32 + int32 + int64 + varint(4) + 3 * (8+8+1+2+1) + 1.
  EXPECT_EQ(v.size(), 2u + 2 + 4 + 4 + 8 + 1 + 3 * 20 + 1);
  auto dv = DecodeShareStateValue(v);
  ASSERT_TRUE(dv.ok()) << dv.status().ToString();
  EXPECT_EQ(*dv, s);
}

TEST(ShareStateRecordsTest, CorruptRecordsAreErrorsNotCrashes) {
  ShareState s;
  s.start_offset = 0;
  s.batches = {{0, 4, RecordState::kAcknowledged, 1}, {5, 9, RecordState::kArchived, 2}};
  const std::string v = EncodeShareStateValue(s);
  for (size_t n = 0; n < v.size(); ++n) {
    EXPECT_FALSE(DecodeShareStateValue(v.substr(0, n)).ok()) << n;
  }
  std::string bad_state = v;
  bad_state[2 + 2 + 4 + 4 + 8 + 1 + 16] = 1;  // Acquired is never persisted
  EXPECT_FALSE(DecodeShareStateValue(bad_state).ok());
  std::string update_key = EncodeShareStateKey({"g", Topic(1), 0});
  update_key[1] = 1;  // ShareUpdateKey: not written here
  EXPECT_FALSE(DecodeShareStateKey(update_key).ok());
  EXPECT_FALSE(DecodeShareStateKey("").ok());
}

TEST(ShareStateRecordsTest, MergeLaysTheUpdateOverAndCutsBelowTheStart) {
  const std::vector<StateBatch> base = {{10, 19, RecordState::kAvailable, 1},
                                        {20, 29, RecordState::kAcknowledged, 1}};
  // An update inside one batch splits it.
  EXPECT_EQ(MergeStateBatches(base, {{12, 13, RecordState::kArchived, 2}}, 10),
            (std::vector<StateBatch>{{10, 11, RecordState::kAvailable, 1},
                                     {12, 13, RecordState::kArchived, 2},
                                     {14, 19, RecordState::kAvailable, 1},
                                     {20, 29, RecordState::kAcknowledged, 1}}));
  // Across two batches; touching batches of one state and count join.
  EXPECT_EQ(MergeStateBatches(base, {{15, 25, RecordState::kAcknowledged, 1}}, 10),
            (std::vector<StateBatch>{{10, 14, RecordState::kAvailable, 1},
                                     {15, 29, RecordState::kAcknowledged, 1}}));
  // The start offset cuts and drops.
  EXPECT_EQ(MergeStateBatches(base, {{30, 31, RecordState::kAvailable, 1}}, 25),
            (std::vector<StateBatch>{{25, 29, RecordState::kAcknowledged, 1},
                                     {30, 31, RecordState::kAvailable, 1}}));
  // Covering everything.
  EXPECT_EQ(MergeStateBatches(base, {{0, 40, RecordState::kArchived, 5}}, 0),
            (std::vector<StateBatch>{{0, 40, RecordState::kArchived, 5}}));
  EXPECT_TRUE(MergeStateBatches(base, {}, 30).empty());
}

TEST(ShareStateRecordsTest, CoordinatorKeyIsKafkas) {
  EXPECT_EQ(ShareCoordinatorKey({"grp", Uuid{}, 4}), "grp:AAAAAAAAAAAAAAAAAAAAAA:4");
}

class ShareCoordinatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("share_coord_" + std::to_string(std::random_device{}()));
    fs::create_directories(dir_);
    Reopen();
  }
  void TearDown() override {
    c_.reset();
    fs::remove_all(dir_);
  }
  void Reopen(int64_t segment_bytes = 1 << 20) {
    if (c_) c_->Stop();
    c_.reset();
    ShareCoordinator::Options o;
    o.data_dir = dir_.string();
    o.log_services.flusher = &flusher_;
    o.log_services.listener = &purgatory_;
    o.log_services.commit_requires_fsync = true;
    o.segment_bytes = segment_bytes;
    auto c = ShareCoordinator::Open(std::move(o));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    c_ = std::move(c).value();
  }
  // Waits until the log's high watermark reaches `end` (the flusher's fsync).
  void WaitCommitted(int64_t end) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (c_->log_partition()->high_watermark().value() < end) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  static ShareState Snap(int64_t start, std::vector<StateBatch> batches, int32_t leader = 0) {
    ShareState s;
    s.start_offset = start;
    s.leader_epoch = leader;
    s.batches = std::move(batches);
    return s;
  }

  fs::path dir_;
  Flusher flusher_;
  Purgatory purgatory_;
  std::shared_ptr<ShareCoordinator> c_;
};

TEST_F(ShareCoordinatorTest, WritesAreReadBackAndSurviveReopening) {
  const SharePartitionKey a{"g", Topic(1), 0}, b{"g", Topic(1), 1}, other{"h", Topic(1), 0};
  EXPECT_FALSE(c_->Read(a).has_value());
  auto init = c_->Initialize(a, 0, 50, 0);
  ASSERT_EQ(init.error, KafkaError::kNone);
  WaitCommitted(init.end);
  EXPECT_EQ(c_->Read(a)->start_offset, 50);
  auto w = c_->Write(a, Snap(52, {{52, 55, RecordState::kAcknowledged, 1},
                                  {56, 56, RecordState::kAvailable, 2}}));
  ASSERT_EQ(w.error, KafkaError::kNone);
  EXPECT_GT(w.end, init.end);
  ASSERT_EQ(c_->Write(b, Snap(7, {})).error, KafkaError::kNone);  // first write initializes
  ASSERT_EQ(c_->Write(other, Snap(1, {})).error, KafkaError::kNone);
  auto last = c_->Write(a, Snap(-1, {{56, 56, RecordState::kArchived, 2}}));
  ASSERT_EQ(last.error, KafkaError::kNone);
  WaitCommitted(last.end);
  const ShareState want = *c_->Read(a);
  EXPECT_EQ(want.start_offset, 52);
  EXPECT_EQ(want.batches, (std::vector<StateBatch>{{52, 55, RecordState::kAcknowledged, 1},
                                                   {56, 56, RecordState::kArchived, 2}}));
  Reopen();
  EXPECT_EQ(*c_->Read(a), want);
  EXPECT_EQ(c_->Read(b)->start_offset, 7);
  EXPECT_EQ(c_->StatesOf("g").size(), 2u);
  EXPECT_EQ(c_->StatesOf("h").size(), 1u);
  EXPECT_EQ(c_->StatesOf("gg").size(), 0u);
}

TEST_F(ShareCoordinatorTest, EpochsFenceStaleWriters) {
  const SharePartitionKey k{"g", Topic(2), 0};
  ASSERT_EQ(c_->Write(k, Snap(0, {}, /*leader=*/3)).error, KafkaError::kNone);
  EXPECT_EQ(c_->Write(k, Snap(5, {}, /*leader=*/2)).error, KafkaError::kFencedLeaderEpoch);
  ShareState wrong_state = Snap(5, {}, 3);
  wrong_state.state_epoch = 1;
  EXPECT_EQ(c_->Write(k, wrong_state).error, KafkaError::kFencedStateEpoch);
  EXPECT_EQ(c_->Initialize(k, 0, 9, 3).error, KafkaError::kFencedStateEpoch);
  ASSERT_EQ(c_->Initialize(k, 1, 9, 3).error, KafkaError::kNone);  // a reset
  EXPECT_EQ(c_->Read(k)->start_offset, 9);
  EXPECT_EQ(c_->Read(k)->state_epoch, 1);
  EXPECT_EQ(c_->Write(k, wrong_state).error, KafkaError::kNone);
  EXPECT_EQ(c_->Read(k)->start_offset, 5);
}

TEST_F(ShareCoordinatorTest, DeleteGroupTombstonesItsStatesOnly) {
  ASSERT_EQ(c_->Write({"g", Topic(3), 0}, Snap(1, {})).error, KafkaError::kNone);
  ASSERT_EQ(c_->Write({"g", Topic(3), 1}, Snap(2, {})).error, KafkaError::kNone);
  ASSERT_EQ(c_->Write({"g2", Topic(3), 0}, Snap(3, {})).error, KafkaError::kNone);
  auto d = c_->DeleteGroup("g");
  ASSERT_EQ(d.error, KafkaError::kNone);
  WaitCommitted(d.end);
  EXPECT_EQ(c_->size(), 1u);
  Reopen();
  EXPECT_EQ(c_->size(), 1u);
  EXPECT_TRUE(c_->StatesOf("g").empty());
  EXPECT_EQ(c_->Read({"g2", Topic(3), 0})->start_offset, 3);
}

TEST_F(ShareCoordinatorTest, DeleteTombstonesTheListedKeysOnly) {
  const SharePartitionKey a{"g", Topic(6), 0}, b{"g", Topic(6), 1}, c{"g", Topic(7), 0},
      never{"g", Topic(6), 9};
  ASSERT_EQ(c_->Write(a, Snap(1, {})).error, KafkaError::kNone);
  ASSERT_EQ(c_->Write(b, Snap(2, {})).error, KafkaError::kNone);
  ASSERT_EQ(c_->Write(c, Snap(3, {})).error, KafkaError::kNone);
  // Keys never stored and repeated keys are skipped.
  auto d = c_->Delete({a, never, a, c});
  ASSERT_EQ(d.error, KafkaError::kNone);
  WaitCommitted(d.end);
  EXPECT_FALSE(c_->Read(a).has_value());
  EXPECT_FALSE(c_->Read(c).has_value());
  EXPECT_EQ(c_->Read(b)->start_offset, 2);
  // Nothing stored: nothing appended, the log end to wait for.
  const int64_t end = c_->log_partition()->log_end_offset().value();
  auto none = c_->Delete({never, a});
  EXPECT_EQ(none.error, KafkaError::kNone);
  EXPECT_EQ(none.end, end);
  EXPECT_EQ(c_->log_partition()->log_end_offset().value(), end);
  Reopen();
  EXPECT_EQ(c_->size(), 1u);
  EXPECT_EQ(c_->Read(b)->start_offset, 2);
  c_->Stop();
  EXPECT_EQ(c_->Delete({b}).error, KafkaError::kNotCoordinator);
}

TEST_F(ShareCoordinatorTest, WriteRequiringInitializationRefusesUnknownKeys) {
  const SharePartitionKey k{"g", Topic(8), 0};
  EXPECT_EQ(c_->Write(k, Snap(3, {}), /*require_initialized=*/true).error,
            KafkaError::kInvalidRequest);
  EXPECT_FALSE(c_->Read(k).has_value());
  ASSERT_EQ(c_->Initialize(k, 0, 5, -1).error, KafkaError::kNone);
  ASSERT_EQ(c_->Write(k, Snap(7, {}), /*require_initialized=*/true).error, KafkaError::kNone);
  EXPECT_EQ(c_->Read(k)->start_offset, 7);
  c_->Stop();
  EXPECT_EQ(c_->Write({"g", Topic(8), 1}, Snap(0, {}), true).error, KafkaError::kNotCoordinator);
}

TEST_F(ShareCoordinatorTest, CompactionKeepsTheNewestStateOfEveryKey) {
  Reopen(/*segment_bytes=*/4096);
  int64_t end = 0;
  for (int i = 0; i < 2000; ++i) {
    const SharePartitionKey k{"g", Topic(4), i % 5};
    auto w = c_->Write(k, Snap(i, {{i, i, RecordState::kAvailable, 1}}));
    ASSERT_EQ(w.error, KafkaError::kNone);
    end = w.end;
  }
  WaitCommitted(end);
  // Another write lets the finished rewrite drop the old records.
  auto w = c_->Write({"g", Topic(4), 0}, Snap(-1, {}));
  ASSERT_EQ(w.error, KafkaError::kNone);
  WaitCommitted(w.end);
  EXPECT_LT(c_->log_partition()->size_bytes(), 2000 * 40);
  Reopen(4096);
  for (int p = 0; p < 5; ++p) {
    const int64_t last = 1995 + p;
    EXPECT_EQ(c_->Read({"g", Topic(4), p})->start_offset, last) << p;
  }
}

TEST_F(ShareCoordinatorTest, StoppedAnswersNotCoordinator) {
  c_->Stop();
  EXPECT_EQ(c_->Write({"g", Topic(5), 0}, Snap(0, {})).error, KafkaError::kNotCoordinator);
  EXPECT_EQ(c_->Initialize({"g", Topic(5), 0}, 0, 0, 0).error, KafkaError::kNotCoordinator);
}

}  // namespace
}  // namespace headrace::broker::share
