// LocalTxnMarkerWriter over a real BrokerState: markers answered once
// committed (below the HW), per-partition errors in order, a timeout when
// the ISR does not commit, leadership lost while waiting, and `done`
// exactly once.
#include "broker/api/txn_marker_local.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <thread>

#include "broker/topics/broker_state.h"
#include "broker/base/kafka_error.h"
#include "broker/base/serial_executor.h"
#include "headrace/record_batch.h"

namespace headrace::broker {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class TxnMarkerLocalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("hr_txn_marker_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    BrokerConfig config;
    config.data_dir = dir_.string();
    auto state = BrokerState::Open(config);
    ASSERT_TRUE(state.ok()) << state.status().ToString();
    state_ = std::move(*state);
    ctx_.state = state_.get();
    CreateTopicRequest req;
    req.name = "m";
    ASSERT_TRUE(state_->topics().CreateTopic(req).ok());
    p_ = state_->topics().FindPartition("m", 0);
    ASSERT_NE(p_, nullptr);
    BatchProducerFields f;
    f.producer_id = 9;
    f.producer_epoch = 0;
    f.base_sequence = 0;
    f.transactional = true;
    std::string b = BuildBatch({{std::nullopt, "v", {}, TimestampMs(5)}}, f);
    ASSERT_TRUE(p_->AppendAsLeader({reinterpret_cast<uint8_t*>(b.data()), b.size()}).ok());
  }
  void TearDown() override {
    p_.reset();
    if (state_) {
      EXPECT_TRUE(state_->Close().ok());
    }
    state_.reset();
    fs::remove_all(dir_);
  }
  // Writes `spec` and waits for `done`; fails if it runs more than once.
  std::vector<KafkaError> WriteAndWait(txn::TxnMarkerSpec spec, std::chrono::milliseconds timeout,
                                       const std::function<void()>& meanwhile = {}) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      calls_ = 0;
      errors_.clear();
    }
    LocalTxnMarkerWriter writer(ctx_, executor_, timeout);
    writer.Write(std::move(spec), [this](std::vector<KafkaError> errors) {
      std::lock_guard<std::mutex> lock(mu_);
      ++calls_;
      errors_ = std::move(errors);
    });
    if (meanwhile) meanwhile();
    for (int i = 0; i < 5000; ++i) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (calls_ > 0) break;
      }
      std::this_thread::sleep_for(1ms);
    }
    std::this_thread::sleep_for(20ms);  // a second call would land here
    std::lock_guard<std::mutex> lock(mu_);
    EXPECT_EQ(calls_, 1);
    return errors_;
  }
  static txn::TxnMarkerSpec Spec(bool commit, std::vector<std::pair<std::string, int32_t>> parts) {
    txn::TxnMarkerSpec spec;
    spec.producer_id = 9;
    spec.producer_epoch = 0;
    spec.commit = commit;
    spec.partitions = std::move(parts);
    return spec;
  }

  fs::path dir_;
  std::unique_ptr<BrokerState> state_;
  BrokerContext ctx_;
  // Where the writer runs `done` when a marker had to wait (as the broker).
  std::shared_ptr<SerialExecutor> executor_ = std::make_shared<SerialExecutor>("hr-test-markers");
  std::shared_ptr<Partition> p_;
  std::mutex mu_;
  int calls_ = 0;
  std::vector<KafkaError> errors_;
};

TEST_F(TxnMarkerLocalTest, MarkersAreAnsweredOnceCommittedWithOneErrorPerPartitionInOrder) {
  auto errors = WriteAndWait(
      Spec(true, {{"absent", 0}, {"m", 0}, {"m", 3}, {kConsumerOffsetsTopic, 0}}), 5s);
  EXPECT_EQ(errors, (std::vector<KafkaError>{KafkaError::kUnknownTopicOrPartition,
                                             KafkaError::kNone,
                                             KafkaError::kUnknownTopicOrPartition,
                                             KafkaError::kNotCoordinator}));
  EXPECT_GE(p_->high_watermark(), Offset(2));  // the marker (offset 1) is committed
  EXPECT_TRUE(p_->ongoing_transactions().empty());
  EXPECT_EQ(p_->last_stable_offset(), p_->high_watermark());
}

TEST_F(TxnMarkerLocalTest, AMarkerTheIsrDoesNotCommitTimesOut) {
  // A follower in the ISR that never fetches holds the HW back.
  ASSERT_TRUE(p_->BecomeLeader(LeaderEpoch(1), {0, 1}, {0, 1}).ok());
  EXPECT_EQ(WriteAndWait(Spec(false, {{"m", 0}}), 200ms),
            std::vector<KafkaError>{KafkaError::kRequestTimedOut});
  EXPECT_EQ(p_->aborted_transactions().size(), 1u);  // appended, not committed
  EXPECT_TRUE(p_->ongoing_transactions().empty());
  EXPECT_EQ(p_->last_stable_offset(), Offset(0));    // held until the marker commits
}

TEST_F(TxnMarkerLocalTest, LeadershipLostWhileWaitingAnswersNotLeader) {
  ASSERT_TRUE(p_->BecomeLeader(LeaderEpoch(1), {0, 1}, {0, 1}).ok());
  auto errors = WriteAndWait(Spec(true, {{"m", 0}}), 10s, [this] {
    std::this_thread::sleep_for(20ms);
    ASSERT_TRUE(p_->BecomeFollower(LeaderEpoch(2), 1, {0, 1}).ok());
  });
  EXPECT_EQ(errors, std::vector<KafkaError>{KafkaError::kNotLeaderOrFollower});
  // A follower refuses new markers at once.
  EXPECT_EQ(WriteAndWait(Spec(true, {{"m", 0}}), 10s),
            std::vector<KafkaError>{KafkaError::kNotLeaderOrFollower});
}

}  // namespace
}  // namespace headrace::broker
