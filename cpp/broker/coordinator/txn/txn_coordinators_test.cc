// The router of a broker's transaction coordinators (txn_coordinators.h):
// lookups by transactional id over the partitions of __transaction_state,
// the errors for ids coordinated elsewhere, and what several coordinators
// share (one producer id allocator, one persist executor, one timer). The
// coordinators are real (each on its own log, flushed by a real Flusher,
// waited for in a real Purgatory); the marker writer records and answers
// NONE.
#include "broker/coordinator/txn/txn_coordinators.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <future>
#include <random>
#include <set>
#include <thread>

#include "broker/partition/flusher.h"
#include "broker/coordinator/base/group_partition.h"

namespace headrace::broker::txn {
namespace {

namespace fs = std::filesystem;

class CountingMarkers : public TxnMarkerWriter {
 public:
  void Write(TxnMarkerSpec spec, MarkersDone done) override {
    ++written;
    done(std::vector<KafkaError>(spec.partitions.size(), KafkaError::kNone));
  }
  std::atomic<int> written{0};
};

class TxnCoordinatorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::temp_directory_path() / ("txn_router_" + std::to_string(std::random_device{}()));
    fs::create_directories(base_);
    auto ids = ProducerIdAllocator::Open(base_.string());
    ASSERT_TRUE(ids.ok());
    ids_ = std::move(ids).value();
  }
  void TearDown() override {
    router_.StopAll();
    fs::remove_all(base_);
  }
  // A coordinator on its own log, without a timer of its own, on the
  // shared allocator and executor.
  std::shared_ptr<TxnCoordinator> Open(const std::string& name) {
    TxnCoordinator::Options o;
    o.config.max_timeout_ms = 60000;
    o.config.abort_check_interval_ms = 100;
    o.data_dir = (base_ / name).string();
    fs::create_directories(o.data_dir);
    o.log_services.flusher = &flusher_;
    o.log_services.listener = &purgatory_;
    o.purgatory = &purgatory_;
    o.markers = &markers_;
    o.producer_ids = ids_.get();
    o.executor = executor_;
    o.start_timer = false;
    o.now_ms = [this] { return now_.load(); };
    auto c = TxnCoordinator::Open(std::move(o));
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return std::move(c).value();
  }
  // Init, AddPartitions and EndTxn through the router, as the handlers do.
  InitProducerIdResult Init(const std::string& id, int32_t timeout_ms = 10000) {
    TxnCoordinatorLookup found = router_.For(id);
    if (!found.coordinator) return {found.error, -1, -1};
    std::promise<InitProducerIdResult> p;
    found.coordinator->InitProducerId(id, timeout_ms, -1, -1,
                                      [&](InitProducerIdResult r) { p.set_value(r); });
    return p.get_future().get();
  }
  KafkaError Add(const std::string& id, const InitProducerIdResult& r) {
    TxnCoordinatorLookup found = router_.For(id);
    if (!found.coordinator) return found.error;
    std::promise<KafkaError> p;
    found.coordinator->AddPartitions(id, r.producer_id, r.producer_epoch, {{"out", 0}},
                                     [&](KafkaError e) { p.set_value(e); });
    return p.get_future().get();
  }
  KafkaError End(const std::string& id, const InitProducerIdResult& r, bool commit) {
    TxnCoordinatorLookup found = router_.For(id);
    if (!found.coordinator) return found.error;
    std::promise<KafkaError> p;
    found.coordinator->EndTxn(id, r.producer_id, r.producer_epoch, commit,
                              [&](KafkaError e) { p.set_value(e); });
    return p.get_future().get();
  }
  TxnState StateOf(const std::string& id) {
    return router_.For(id).coordinator->Describe(id).metadata.state;
  }
  bool WaitState(const std::string& id, TxnState state) {
    for (int i = 0; i < 1000; ++i) {
      if (StateOf(id) == state) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

  fs::path base_;
  Flusher flusher_;
  Purgatory purgatory_;
  CountingMarkers markers_;
  std::unique_ptr<ProducerIdAllocator> ids_;
  std::shared_ptr<SerialExecutor> executor_ = std::make_shared<SerialExecutor>("hr-txn-test");
  std::atomic<int64_t> now_{1'000'000};
  TxnCoordinators router_{KafkaError::kNotCoordinator};
};

// Transactional ids of the test, with their partitions of 6 (Kafka's rule,
// the same as groups': group_partition_test has the JVM-computed values).
constexpr const char* kOnTwo = "gr\xc3\xbcppe";  // partition 2 of 6
constexpr const char* kOnOne = "a";              // 97 % 6 = partition 1

TEST_F(TxnCoordinatorsTest, RoutesByTransactionalIdPartition) {
  // No __transaction_state yet: nobody coordinates.
  EXPECT_EQ(router_.For("t").error, KafkaError::kCoordinatorNotAvailable);
  EXPECT_EQ(router_.PartitionFor("t"), -1);
  router_.SetPartitionCount(6);
  ASSERT_EQ(group::GroupPartition(kOnTwo, 6), 2);
  ASSERT_EQ(group::GroupPartition(kOnOne, 6), 1);
  auto two = Open("p2");
  router_.Set(2, two);
  TxnCoordinatorLookup here = router_.For(kOnTwo);
  EXPECT_EQ(here.error, KafkaError::kNone);
  EXPECT_EQ(here.coordinator, two);
  EXPECT_EQ(here.partition, 2);
  EXPECT_EQ(router_.PartitionFor(kOnTwo), 2);
  // Partition 1 is led elsewhere: NOT_COORDINATOR, and the request never
  // reaches a coordinator here.
  TxnCoordinatorLookup elsewhere = router_.For(kOnOne);
  EXPECT_EQ(elsewhere.error, KafkaError::kNotCoordinator);
  EXPECT_EQ(elsewhere.coordinator, nullptr);
  EXPECT_EQ(elsewhere.partition, 1);
  EXPECT_EQ(Init(kOnOne).error, KafkaError::kNotCoordinator);
  EXPECT_EQ(two->Describe(kOnOne).error, KafkaError::kTransactionalIdNotFound);
  // The broker stops leading partition 2: the coordinator is stopped and
  // its ids answer NOT_COORDINATOR.
  router_.Stop(2);
  EXPECT_EQ(router_.For(kOnTwo).error, KafkaError::kNotCoordinator);
  EXPECT_EQ(two->Describe(kOnTwo).error, KafkaError::kNotCoordinator);
  // A single node's router answers COORDINATOR_NOT_AVAILABLE without one.
  TxnCoordinators single(KafkaError::kCoordinatorNotAvailable);
  single.SetPartitionCount(1);
  EXPECT_EQ(single.For("t").error, KafkaError::kCoordinatorNotAvailable);
  EXPECT_EQ(single.For("t").partition, 0);
}

TEST_F(TxnCoordinatorsTest, CoordinatorsShareOneAllocatorAndExecutor) {
  router_.SetPartitionCount(6);
  router_.Set(1, Open("p1"));
  router_.Set(2, Open("p2"));
  // Producer ids stay unique across the coordinators of a broker: they
  // come from its one allocator.
  InitProducerIdResult a = Init(kOnOne);
  InitProducerIdResult b = Init(kOnTwo);
  ASSERT_EQ(a.error, KafkaError::kNone);
  ASSERT_EQ(b.error, KafkaError::kNone);
  EXPECT_NE(a.producer_id, b.producer_id);
  std::set<int64_t> pids{a.producer_id, b.producer_id};
  for (int i = 0; i < 20; ++i) {
    const std::string id = "id-" + std::to_string(i);
    const int32_t p = router_.PartitionFor(id);
    if (!router_.ForPartition(p)) router_.Set(p, Open("p" + std::to_string(p)));
    InitProducerIdResult r = Init(id);
    ASSERT_EQ(r.error, KafkaError::kNone) << id;
    EXPECT_TRUE(pids.insert(r.producer_id).second) << id << " got a producer id twice";
  }
  // Each id is known only to its own partition's coordinator.
  EXPECT_EQ(router_.ForPartition(2)->Describe(kOnOne).error,
            KafkaError::kTransactionalIdNotFound);
  // A transaction on each, committed and aborted, through the one executor.
  ASSERT_EQ(Add(kOnOne, a), KafkaError::kNone);
  ASSERT_EQ(Add(kOnTwo, b), KafkaError::kNone);
  ASSERT_EQ(End(kOnOne, a, true), KafkaError::kNone);
  ASSERT_EQ(End(kOnTwo, b, false), KafkaError::kNone);
  EXPECT_TRUE(WaitState(kOnOne, TxnState::kCompleteCommit));
  EXPECT_TRUE(WaitState(kOnTwo, TxnState::kCompleteAbort));
  EXPECT_EQ(markers_.written.load(), 2);
}

TEST_F(TxnCoordinatorsTest, SharedTimerAbortsTimedOutTransactionsOfEachPartition) {
  router_.SetPartitionCount(6);
  router_.Set(1, Open("p1"));
  router_.Set(2, Open("p2"));
  InitProducerIdResult shortlived = Init(kOnOne, 1000);
  InitProducerIdResult longlived = Init(kOnTwo, 60000);
  ASSERT_EQ(Add(kOnOne, shortlived), KafkaError::kNone);
  ASSERT_EQ(Add(kOnTwo, longlived), KafkaError::kNone);
  router_.StartTimer(kTxnTimerPeriodMs);
  now_ += 2000;  // past the first one's timeout and the abort check interval
  // The router's one timer ticks both coordinators: the timed-out
  // transaction is aborted (its producer fenced), the other stays open.
  EXPECT_TRUE(WaitState(kOnOne, TxnState::kCompleteAbort));
  EXPECT_EQ(StateOf(kOnTwo), TxnState::kOngoing);
  EXPECT_EQ(End(kOnOne, shortlived, true), KafkaError::kProducerFenced);
  EXPECT_EQ(End(kOnTwo, longlived, true), KafkaError::kNone);
  EXPECT_TRUE(WaitState(kOnTwo, TxnState::kCompleteCommit));
  // StopAll: the timer and every coordinator stop.
  auto one = router_.ForPartition(1);
  router_.StopAll();
  EXPECT_TRUE(router_.All().empty());
  EXPECT_EQ(one->Describe(kOnOne).error, KafkaError::kNotCoordinator);
}

}  // namespace
}  // namespace headrace::broker::txn
