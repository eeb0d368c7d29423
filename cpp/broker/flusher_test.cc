#include "broker/flusher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "broker/fake_log_test_util.h"

namespace headrace::broker {
namespace {

using namespace std::chrono_literals;
using testing::FakeBatch;
using testing::FakeLog;

// A partition whose HW follows its fsyncs (headrace.acks.all.fsync).
std::shared_ptr<Partition> MakePartition(FakeLog** raw, Flusher* flusher, int32_t id = 0) {
  auto log = std::make_unique<FakeLog>();
  *raw = log.get();
  PartitionServices services;
  services.flusher = flusher;
  services.commit_requires_fsync = true;
  return std::make_shared<Partition>(TopicPartition{"t", id}, Uuid::Random(), std::move(log),
                                     TopicSettings{}, services);
}

Offset Append(Partition& p) {
  std::string b = FakeBatch(1);
  auto r = p.AppendAsLeader({reinterpret_cast<uint8_t*>(b.data()), b.size()});
  EXPECT_TRUE(r.ok());
  return r->last_offset;
}

bool WaitFor(const std::function<bool()>& cond) {
  for (int i = 0; i < 5000 && !cond(); ++i) std::this_thread::sleep_for(1ms);
  return cond();
}

TEST(FlusherTest, AnAppendIsFsyncedOnTheFlusherThreadThenCommitted) {
  Flusher flusher;
  FakeLog* log;
  auto p = MakePartition(&log, &flusher);
  Offset last = Append(*p);
  ASSERT_TRUE(WaitFor([&] { return p->high_watermark() > last; }));
  EXPECT_EQ(log->flushes(), 1);
  EXPECT_EQ(p->flushed_offset(), Offset(1));
  EXPECT_EQ(flusher.stats().fsyncs, 1u);
}

TEST(FlusherTest, HeldFlusherKeepsTheHighWatermarkAtTheFlushedOffset) {
  Flusher flusher;
  FakeLog* log;
  auto p = MakePartition(&log, &flusher);
  flusher.Hold();
  for (int i = 0; i < 5; ++i) Append(*p);
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(p->log_end_offset(), Offset(5));
  EXPECT_EQ(p->high_watermark(), Offset(0));  // appended, not committed
  auto read = p->Read(Offset(0), 1 << 20, IsolationLevel::kReadUncommitted);
  ASSERT_TRUE(read.ok());
  EXPECT_TRUE(read->data.slices.empty());  // nothing visible to consumers
  flusher.Release();
  ASSERT_TRUE(WaitFor([&] { return p->high_watermark() == Offset(5); }));
  EXPECT_EQ(log->flushes(), 1);  // scheduled once while held: one fsync
}

TEST(FlusherTest, ConcurrentAppendsShareFsyncs) {
  Flusher flusher;
  FakeLog* log;
  auto p = MakePartition(&log, &flusher);
  log->flush_delay = 5ms;  // a slow disk
  constexpr int kThreads = 8, kPerThread = 25;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) {
        Offset last = Append(*p);
        ASSERT_TRUE(WaitFor([&] { return p->high_watermark() > last; }));
      }
    });
  }
  for (auto& t : threads) t.join();
  const int appends = kThreads * kPerThread;
  EXPECT_EQ(p->high_watermark(), Offset(appends));
  std::printf("%d acks=all appends, %d fsyncs\n", appends, log->flushes());
  EXPECT_LT(log->flushes(), appends / 2);  // group commit
}

TEST(FlusherTest, EachPartitionIsFsyncedOncePerRound) {
  Flusher flusher;
  flusher.Hold();
  FakeLog *a_log, *b_log;
  auto a = MakePartition(&a_log, &flusher, 0);
  auto b = MakePartition(&b_log, &flusher, 1);
  for (int i = 0; i < 10; ++i) {
    Append(*a);
    Append(*b);
  }
  flusher.Release();
  ASSERT_TRUE(WaitFor([&] { return a->high_watermark() == Offset(10) && b->high_watermark() == Offset(10); }));
  EXPECT_EQ(a_log->flushes(), 1);
  EXPECT_EQ(b_log->flushes(), 1);
  EXPECT_EQ(flusher.stats().rounds, 1u);
}

TEST(FlusherTest, StopFlushesWhatIsScheduledAndIgnoresLaterSchedules) {
  FakeLog* log;
  auto flusher = std::make_unique<Flusher>();
  auto p = MakePartition(&log, flusher.get());
  flusher->Hold();
  Append(*p);
  flusher->Stop();
  EXPECT_EQ(p->high_watermark(), Offset(1));
  Append(*p);  // after Stop: not flushed here (Close will)
  std::this_thread::sleep_for(10ms);
  EXPECT_EQ(log->flushes(), 1);
  EXPECT_EQ(p->high_watermark(), Offset(1));
}

}  // namespace
}  // namespace headrace::broker
