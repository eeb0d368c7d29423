// The transaction coordinator's state machine over its real log (flushed by
// a real Flusher, waited for in a real Purgatory), with a marker writer
// that records what it was asked and answers as the test says.
#include "broker/coordinator/txn/txn_coordinator.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <condition_variable>
#include <filesystem>
#include <future>
#include <random>

#include "broker/partition/flusher.h"

namespace headrace::broker::txn {
namespace {

namespace fs = std::filesystem;

// Records every spec; answers with `answer` (NONE by default) at once, or
// keeps the callback when `hold` is set.
class FakeMarkers : public TxnMarkerWriter {
 public:
  void Write(TxnMarkerSpec spec, MarkersDone done) override {
    std::unique_lock<std::mutex> lock(mu);
    specs.push_back(spec);
    if (hold) {
      held.push_back({spec, std::move(done)});
      return;
    }
    std::vector<KafkaError> errors(spec.partitions.size(), answer);
    lock.unlock();
    done(errors);
  }
  size_t count() {
    std::lock_guard<std::mutex> lock(mu);
    return specs.size();
  }
  std::mutex mu;
  std::vector<TxnMarkerSpec> specs;
  std::vector<std::pair<TxnMarkerSpec, MarkersDone>> held;
  KafkaError answer = KafkaError::kNone;
  bool hold = false;
};

class TxnCoordinatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("txn_test_" + std::to_string(std::random_device{}()));
    fs::create_directories(dir_);
    auto ids = ProducerIdAllocator::Open(dir_.string());
    ASSERT_TRUE(ids.ok());
    ids_ = std::move(ids).value();
    Reopen();
  }
  void TearDown() override {
    if (c_) c_->Stop();
    c_.reset();
    fs::remove_all(dir_);
  }
  void Reopen() {
    if (c_) c_->Stop();
    c_.reset();
    TxnCoordinator::Options o;
    o.config.max_timeout_ms = 60000;
    o.data_dir = dir_.string();
    o.log_services.flusher = &flusher_;
    o.log_services.listener = &purgatory_;
    o.purgatory = &purgatory_;
    o.markers = &markers_;
    o.producer_ids = ids_.get();
    o.start_timer = false;
    o.now_ms = [this] { return now_.load(); };
    auto c = TxnCoordinator::Open(std::move(o));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    c_ = std::move(c).value();
  }
  InitProducerIdResult Init(const std::string& id, int32_t timeout = 10000, int64_t pid = -1,
                            int16_t epoch = -1) {
    std::promise<InitProducerIdResult> p;
    c_->InitProducerId(id, timeout, pid, epoch, [&](InitProducerIdResult r) { p.set_value(r); });
    return p.get_future().get();
  }
  KafkaError Add(const std::string& id, const InitProducerIdResult& r,
                 std::vector<TxnPartition> parts) {
    std::promise<KafkaError> p;
    c_->AddPartitions(id, r.producer_id, r.producer_epoch, parts,
                      [&](KafkaError e) { p.set_value(e); });
    return p.get_future().get();
  }
  KafkaError End(const std::string& id, const InitProducerIdResult& r, bool commit) {
    std::promise<KafkaError> p;
    c_->EndTxn(id, r.producer_id, r.producer_epoch, commit, [&](KafkaError e) { p.set_value(e); });
    return p.get_future().get();
  }
  // Waits until the marker writer was asked `n` times (markers start after
  // EndTxn is answered).
  bool WaitMarkers(size_t n) {
    for (int i = 0; i < 500 && markers_.count() < n; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return markers_.count() == n;
  }
  // Waits until the id reaches `state` (markers complete asynchronously).
  bool WaitState(const std::string& id, TxnState state) {
    for (int i = 0; i < 500; ++i) {
      if (c_->Describe(id).metadata.state == state) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

  fs::path dir_;
  Flusher flusher_;
  Purgatory purgatory_;
  FakeMarkers markers_;
  std::unique_ptr<ProducerIdAllocator> ids_;
  std::atomic<int64_t> now_{1'000'000};
  std::shared_ptr<TxnCoordinator> c_;
};

TEST(TxnMetadataTest, RecordRoundTrip) {
  TxnMetadata m;
  m.producer_id = 42;
  m.producer_epoch = 7;
  m.timeout_ms = 30000;
  m.state = TxnState::kPrepareCommit;
  m.partitions = {{"a", 0}, {"a", 3}, {"b", 1}};
  m.update_ms = 123;
  m.start_ms = 100;
  auto back = DecodeTxnValue(EncodeTxnValue(m));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->producer_id, 42);
  EXPECT_EQ(back->producer_epoch, 7);
  EXPECT_EQ(back->timeout_ms, 30000);
  EXPECT_EQ(back->state, TxnState::kPrepareCommit);
  EXPECT_EQ(back->partitions, m.partitions);
  EXPECT_EQ(back->update_ms, 123);
  EXPECT_EQ(back->start_ms, 100);
  auto key = DecodeTxnKey(EncodeTxnKey("tx-1"));
  ASSERT_TRUE(key.ok());
  EXPECT_EQ(key.value(), "tx-1");
  EXPECT_FALSE(DecodeTxnValue(EncodeTxnValue(m).substr(0, 20)).ok());
  EXPECT_EQ(TxnStateFromName("prepareabort"), TxnState::kPrepareAbort);
  EXPECT_FALSE(TxnStateFromName("Bogus").has_value());
}

TEST_F(TxnCoordinatorTest, InitBumpsEpochOfKnownIdAndRejectsBadTimeout) {
  InitProducerIdResult a = Init("t");
  ASSERT_EQ(a.error, KafkaError::kNone);
  EXPECT_EQ(a.producer_epoch, 0);
  InitProducerIdResult b = Init("t");
  ASSERT_EQ(b.error, KafkaError::kNone);
  EXPECT_EQ(b.producer_id, a.producer_id);
  EXPECT_EQ(b.producer_epoch, 1);
  EXPECT_EQ(Init("t", 0).error, KafkaError::kInvalidTransactionTimeout);
  EXPECT_EQ(Init("t", 60001).error, KafkaError::kInvalidTransactionTimeout);
  // The old epoch is fenced.
  EXPECT_EQ(Add("t", a, {{"x", 0}}), KafkaError::kProducerFenced);
  EXPECT_EQ(Add("t", {KafkaError::kNone, a.producer_id + 1, 1}, {{"x", 0}}),
            KafkaError::kInvalidProducerIdMapping);
  EXPECT_EQ(Add("unknown", b, {{"x", 0}}), KafkaError::kInvalidProducerIdMapping);
}

TEST_F(TxnCoordinatorTest, CommitWritesMarkersToEveryPartitionThenCompletes) {
  InitProducerIdResult r = Init("t");
  ASSERT_EQ(Add("t", r, {{"x", 0}, {"y", 2}}), KafkaError::kNone);
  ASSERT_EQ(Add("t", r, {{"x", 0}, {"__consumer_offsets", 0}}), KafkaError::kNone);
  TxnDescription d = c_->Describe("t");
  EXPECT_EQ(d.metadata.state, TxnState::kOngoing);
  EXPECT_EQ(d.metadata.partitions.size(), 3u);
  EXPECT_EQ(d.metadata.start_ms, now_.load());
  ASSERT_EQ(End("t", r, true), KafkaError::kNone);
  ASSERT_TRUE(WaitState("t", TxnState::kCompleteCommit));
  ASSERT_EQ(markers_.count(), 1u);
  EXPECT_TRUE(markers_.specs[0].commit);
  EXPECT_EQ(markers_.specs[0].producer_id, r.producer_id);
  EXPECT_EQ(markers_.specs[0].producer_epoch, r.producer_epoch);
  EXPECT_EQ(markers_.specs[0].partitions.size(), 3u);
  EXPECT_TRUE(c_->Describe("t").metadata.partitions.empty());
  // A retried EndTxn(commit) succeeds, an abort now is INVALID_TXN_STATE.
  EXPECT_EQ(End("t", r, true), KafkaError::kNone);
  EXPECT_EQ(End("t", r, false), KafkaError::kInvalidTxnState);
  // The next transaction starts from an empty partition set.
  ASSERT_EQ(Add("t", r, {{"z", 1}}), KafkaError::kNone);
  EXPECT_EQ(c_->Describe("t").metadata.partitions, (std::set<TxnPartition>{{"z", 1}}));
}

TEST_F(TxnCoordinatorTest, EndWithoutTransactionIsInvalidState) {
  InitProducerIdResult r = Init("t");
  EXPECT_EQ(End("t", r, true), KafkaError::kInvalidTxnState);
}

TEST_F(TxnCoordinatorTest, RetriableMarkerErrorsAreRetriedUntilWritten) {
  InitProducerIdResult r = Init("t");
  ASSERT_EQ(Add("t", r, {{"x", 0}}), KafkaError::kNone);
  markers_.answer = KafkaError::kNotLeaderOrFollower;
  ASSERT_EQ(End("t", r, false), KafkaError::kNone);
  ASSERT_TRUE(WaitMarkers(1));
  ASSERT_TRUE(WaitState("t", TxnState::kPrepareAbort));
  // While markers are pending the producer may not start again: a new
  // InitProducerId is told to retry; AddPartitions waits (up to 1 s) and is
  // told to retry when the markers are not written by then.
  EXPECT_EQ(Init("t").error, KafkaError::kConcurrentTransactions);
  std::promise<KafkaError> gave_up;
  std::future<KafkaError> gave_up_answer = gave_up.get_future();
  c_->AddPartitions("t", r.producer_id, r.producer_epoch, {{"x", 0}},
                    [&](KafkaError e) { gave_up.set_value(e); });
  now_ += 999;
  c_->Tick();
  EXPECT_EQ(gave_up_answer.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);
  now_ += 4001;
  c_->Tick();  // past the wait, and the markers' retry is due (still failing)
  EXPECT_EQ(gave_up_answer.get(), KafkaError::kConcurrentTransactions);
  EXPECT_EQ(c_->Describe("t").metadata.state, TxnState::kPrepareAbort);
  EXPECT_GE(markers_.count(), 2u);
  // A parked AddPartitions goes on as soon as the markers are written.
  std::promise<KafkaError> added;
  c_->AddPartitions("t", r.producer_id, r.producer_epoch, {{"y", 1}},
                    [&](KafkaError e) { added.set_value(e); });
  markers_.answer = KafkaError::kNone;
  now_ += 999;  // the markers' next retry is due (backoff 400 ms), the wait is not over
  c_->Tick();
  EXPECT_EQ(added.get_future().get(), KafkaError::kNone);
  EXPECT_FALSE(markers_.specs.back().commit);
  TxnDescription d = c_->Describe("t");
  EXPECT_EQ(d.metadata.state, TxnState::kOngoing);
  EXPECT_EQ(d.metadata.partitions, (std::set<TxnPartition>{{"y", 1}}));
}

TEST_F(TxnCoordinatorTest, NewIncarnationFencesAndAbortsOpenTransaction) {
  InitProducerIdResult old = Init("t");
  ASSERT_EQ(Add("t", old, {{"x", 0}}), KafkaError::kNone);
  // The new producer is told to retry while the old transaction aborts.
  EXPECT_EQ(Init("t").error, KafkaError::kConcurrentTransactions);
  ASSERT_TRUE(WaitState("t", TxnState::kCompleteAbort));
  ASSERT_EQ(markers_.count(), 1u);
  EXPECT_FALSE(markers_.specs[0].commit);
  EXPECT_EQ(markers_.specs[0].producer_epoch, old.producer_epoch + 1);  // fences the old one
  InitProducerIdResult fresh = Init("t");
  ASSERT_EQ(fresh.error, KafkaError::kNone);
  EXPECT_EQ(fresh.producer_epoch, old.producer_epoch + 2);
  EXPECT_EQ(End("t", old, true), KafkaError::kProducerFenced);
}

TEST_F(TxnCoordinatorTest, Kip360RetryAndFencing) {
  InitProducerIdResult a = Init("t");
  InitProducerIdResult b = Init("t", 10000, a.producer_id, a.producer_epoch);
  ASSERT_EQ(b.error, KafkaError::kNone);
  EXPECT_EQ(b.producer_epoch, a.producer_epoch + 1);
  // The same request again (its answer was lost): the same answer.
  InitProducerIdResult again = Init("t", 10000, a.producer_id, a.producer_epoch);
  ASSERT_EQ(again.error, KafkaError::kNone);
  EXPECT_EQ(again.producer_epoch, b.producer_epoch);
  // An id/epoch the coordinator never handed out is fenced.
  EXPECT_EQ(Init("t", 10000, a.producer_id, 40).error, KafkaError::kProducerFenced);
}

TEST_F(TxnCoordinatorTest, TimedOutTransactionIsAbortedAndProducerFenced) {
  InitProducerIdResult r = Init("t", 1000);
  ASSERT_EQ(Add("t", r, {{"x", 0}}), KafkaError::kNone);
  now_ += 500;
  c_->Tick();
  EXPECT_EQ(c_->Describe("t").metadata.state, TxnState::kOngoing);
  now_ += 10'001;  // past the timeout and the abort check interval
  c_->Tick();
  ASSERT_TRUE(WaitState("t", TxnState::kCompleteAbort));
  EXPECT_EQ(End("t", r, true), KafkaError::kProducerFenced);
  EXPECT_EQ(c_->Describe("t").metadata.producer_epoch, r.producer_epoch + 1);
}

TEST_F(TxnCoordinatorTest, StateSurvivesReopenAndPreparedTransactionsFinish) {
  InitProducerIdResult r = Init("t");
  ASSERT_EQ(Add("t", r, {{"x", 0}, {"x", 1}}), KafkaError::kNone);
  InitProducerIdResult open = Init("u");
  ASSERT_EQ(Add("u", open, {{"y", 0}}), KafkaError::kNone);
  markers_.hold = true;  // the coordinator "dies" between the decision and COMPLETE
  ASSERT_EQ(End("t", r, true), KafkaError::kNone);
  ASSERT_TRUE(WaitMarkers(1));
  markers_.hold = false;
  markers_.held.clear();
  Reopen();
  // The prepared transaction's markers are written again at open.
  ASSERT_TRUE(WaitState("t", TxnState::kCompleteCommit));
  EXPECT_EQ(markers_.count(), 2u);
  EXPECT_TRUE(markers_.specs[1].commit);
  EXPECT_EQ(markers_.specs[1].partitions.size(), 2u);
  TxnDescription u = c_->Describe("u");
  EXPECT_EQ(u.metadata.state, TxnState::kOngoing);
  EXPECT_EQ(u.metadata.producer_id, open.producer_id);
  EXPECT_EQ(u.metadata.partitions, (std::set<TxnPartition>{{"y", 0}}));
  // The restored producer goes on.
  EXPECT_EQ(End("u", open, false), KafkaError::kNone);
  ASSERT_TRUE(WaitState("u", TxnState::kCompleteAbort));
}

TEST_F(TxnCoordinatorTest, ListFiltersAndDescribeUnknown) {
  InitProducerIdResult a = Init("a");
  Init("b");
  ASSERT_EQ(Add("a", a, {{"x", 0}}), KafkaError::kNone);
  EXPECT_EQ(c_->List({}, {}, -1).size(), 2u);
  auto ongoing = c_->List({TxnState::kOngoing}, {}, -1);
  ASSERT_EQ(ongoing.size(), 1u);
  EXPECT_EQ(ongoing[0].transactional_id, "a");
  EXPECT_EQ(c_->List({}, {a.producer_id}, -1).size(), 1u);
  EXPECT_EQ(c_->List({}, {}, 1).size(), 0u);  // open for 0 ms so far
  now_ += 10;
  EXPECT_EQ(c_->List({}, {}, 5).size(), 1u);
  EXPECT_EQ(c_->Describe("nope").error, KafkaError::kTransactionalIdNotFound);
}

TEST_F(TxnCoordinatorTest, IdleIdsExpire) {
  Init("idle");
  InitProducerIdResult busy = Init("busy");
  ASSERT_EQ(Add("busy", busy, {{"x", 0}}), KafkaError::kNone);
  now_ += 604800001 + 3600000;
  c_->Tick();
  EXPECT_EQ(c_->Describe("idle").error, KafkaError::kTransactionalIdNotFound);
  // An open transaction is aborted (timed out), not expired.
  EXPECT_EQ(c_->Describe("busy").error, KafkaError::kNone);
  Reopen();
  EXPECT_EQ(c_->Describe("idle").error, KafkaError::kTransactionalIdNotFound);
}

TEST_F(TxnCoordinatorTest, StoppedCoordinatorAnswersNotCoordinator) {
  InitProducerIdResult r = Init("t");
  c_->Stop();
  EXPECT_EQ(Init("t").error, KafkaError::kNotCoordinator);
  EXPECT_EQ(Add("t", r, {{"x", 0}}), KafkaError::kNotCoordinator);
  EXPECT_EQ(End("t", r, true), KafkaError::kNotCoordinator);
}


// Regression: the HW of the coordinator's log can pass an earlier state's
// offset inside a later append, which runs under the coordinator's mutex;
// that earlier state's waiter (WriteMarkers, parked requests) takes the
// mutex. Run inline, it deadlocked the appending thread (seen with two
// Spark tasks committing at once). Several ids committing concurrently
// against a real Flusher must all finish.
TEST_F(TxnCoordinatorTest, ConcurrentCommitsOfManyIdsNeverDeadlock) {
  constexpr int kThreads = 4, kRounds = 500;
  std::atomic<int> finished{0};
  auto done = std::make_shared<std::promise<void>>();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::string id = "concurrent-" + std::to_string(t);
      InitProducerIdResult r = Init(id);
      for (int i = 0; i < kRounds; ++i) {
        KafkaError e = Add(id, r, {{"out", t}});
        if (e == KafkaError::kNone) e = End(id, r, /*commit=*/true);
        if (e != KafkaError::kNone && e != KafkaError::kConcurrentTransactions) {
          ADD_FAILURE() << id << " round " << i << ": " << KafkaErrorName(e);
          break;
        }
      }
      if (++finished == kThreads) done->set_value();
    });
  }
  if (done->get_future().wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    std::fprintf(stderr, "deadlock: %d of %d threads finished in 60 s\n", finished.load(),
                 kThreads);
    std::abort();   // the stuck threads cannot be joined
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_TRUE(WaitState("concurrent-" + std::to_string(t), TxnState::kCompleteCommit));
  }
}

}  // namespace
}  // namespace headrace::broker::txn
