#include "broker/fetch_waiters.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "broker/fake_log_test_util.h"

namespace headrace::broker {
namespace {

using namespace std::chrono_literals;
using testing::FakeBatch;
using testing::FakeLog;
using Clock = FetchWaiters::Clock;

std::shared_ptr<Partition> MakePartition(PartitionListener* listener, int32_t id = 0) {
  return std::make_shared<Partition>(TopicPartition{"t", id}, Uuid::Random(),
                                     std::make_unique<FakeLog>(), TopicSettings{}, listener);
}

void Append(Partition& p) {
  std::string b = FakeBatch(1);
  ASSERT_TRUE(p.Append({reinterpret_cast<uint8_t*>(b.data()), b.size()}).ok());
}

// Counts fires per reason; safe from any thread.
struct Fires {
  std::atomic<int> data{0}, deadline{0}, shutdown{0};
  FetchWaiters::Callback Callback() {
    return [this](WakeReason r) {
      if (r == WakeReason::kData) ++data;
      if (r == WakeReason::kDeadline) ++deadline;
      if (r == WakeReason::kShutdown) ++shutdown;
    };
  }
  int total() const { return data + deadline + shutdown; }
};

bool WaitFor(const std::function<bool()>& cond, std::chrono::milliseconds limit = 5s) {
  auto end = Clock::now() + limit;
  while (!cond()) {
    if (Clock::now() > end) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

TEST(FetchWaitersTest, AppendFromAnotherThreadFiresOnceWithData) {
  FetchWaiters waiters;
  auto p = MakePartition(&waiters);
  Fires fires;
  uint64_t id = waiters.Wait({{p, p->high_watermark()}}, Clock::now() + 300ms, fires.Callback());
  EXPECT_NE(id, 0u);
  EXPECT_EQ(waiters.pending(), 1u);
  std::thread appender([&] { Append(*p); Append(*p); });
  appender.join();
  ASSERT_TRUE(WaitFor([&] { return fires.total() == 1; }));
  std::this_thread::sleep_for(400ms);  // the deadline passes: no second fire
  EXPECT_EQ(fires.data.load(), 1);
  EXPECT_EQ(fires.total(), 1);
  EXPECT_EQ(waiters.pending(), 0u);
  EXPECT_FALSE(waiters.Cancel(id));
}

TEST(FetchWaitersTest, DeadlineFiresOnceOnTheTimerThread) {
  FetchWaiters waiters;
  auto p = MakePartition(&waiters);
  Fires fires;
  auto start = Clock::now();
  std::atomic<bool> other_thread{false};
  auto caller = std::this_thread::get_id();
  waiters.Wait({{p, p->high_watermark()}}, start + 50ms, [&](WakeReason r) {
    other_thread = std::this_thread::get_id() != caller;
    fires.Callback()(r);
  });
  ASSERT_TRUE(WaitFor([&] { return fires.total() == 1; }));
  EXPECT_GE(Clock::now() - start, 50ms);
  EXPECT_EQ(fires.deadline.load(), 1);
  EXPECT_TRUE(other_thread.load());
  Append(*p);  // after the deadline fired: nothing more
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(fires.total(), 1);
}

TEST(FetchWaitersTest, LaterDeadlinesDoNotWakeTheTimerButEarlierOnesFireOnTime) {
  FetchWaiters waiters;
  auto p = MakePartition(&waiters);
  Fires first;
  waiters.Wait({{p, p->high_watermark()}}, Clock::now() + 10s, first.Callback());
  // Let the timer settle asleep until +10 s: it either saw the waiter before
  // its first sleep, or was notified out of that sleep (one wakeup).
  WaitFor([&] { return waiters.timer_wakeups() >= 1; }, 200ms);
  Append(*p);  // answers it; the timer still sleeps until +10 s
  ASSERT_EQ(first.data.load(), 1);
  const uint64_t before = waiters.timer_wakeups();
  // A long-polling consumer: each fetch waits with a later deadline and is
  // answered by data; none of this needs the timer thread.
  for (int i = 0; i < 200; ++i) {
    Fires f;
    uint64_t id = waiters.Wait({{p, p->high_watermark()}}, Clock::now() + 11s, f.Callback());
    ASSERT_NE(id, 0u);
    Append(*p);
    ASSERT_EQ(f.data.load(), 1);
  }
  EXPECT_EQ(waiters.timer_wakeups(), before);
  // An earlier deadline still wakes it and fires on time.
  Fires fast;
  auto start = Clock::now();
  waiters.Wait({{p, p->high_watermark()}}, start + 30ms, fast.Callback());
  ASSERT_TRUE(WaitFor([&] { return fast.total() == 1; }));
  EXPECT_EQ(fast.deadline.load(), 1);
  EXPECT_GE(Clock::now() - start, 30ms);
  EXPECT_LT(Clock::now() - start, 3s);
  EXPECT_GT(waiters.timer_wakeups(), before);
}

TEST(FetchWaitersTest, DataThatArrivedBeforeWaitFiresImmediately) {
  FetchWaiters waiters;
  auto p = MakePartition(&waiters);
  Offset seen = p->high_watermark();
  Append(*p);  // lands between the fetch's read and its Wait
  Fires fires;
  EXPECT_EQ(waiters.Wait({{p, seen}}, Clock::now() + 10s, fires.Callback()), 0u);
  EXPECT_EQ(fires.data.load(), 1);
  EXPECT_EQ(waiters.pending(), 0u);
}

TEST(FetchWaitersTest, WatchesSeveralPartitionsAndCancel) {
  FetchWaiters waiters;
  auto a = MakePartition(&waiters, 0);
  auto b = MakePartition(&waiters, 1);
  Fires fires, cancelled;
  waiters.Wait({{a, a->high_watermark()}, {b, b->high_watermark()}}, Clock::now() + 10s,
               fires.Callback());
  uint64_t c = waiters.Wait({{a, a->high_watermark()}}, Clock::now() + 10s, cancelled.Callback());
  EXPECT_TRUE(waiters.Cancel(c));
  Append(*b);
  EXPECT_EQ(fires.data.load(), 1);
  Append(*a);
  EXPECT_EQ(fires.total(), 1);
  EXPECT_EQ(cancelled.total(), 0);
}

TEST(FetchWaitersTest, ShutdownFiresPendingAndLaterWaits) {
  Fires fires;
  auto waiters = std::make_unique<FetchWaiters>();
  auto p = MakePartition(waiters.get());
  waiters->Wait({{p, p->high_watermark()}}, Clock::now() + 10s, fires.Callback());
  waiters->Shutdown();
  EXPECT_EQ(fires.shutdown.load(), 1);
  waiters->Wait({{p, p->high_watermark()}}, Clock::now() + 10s, fires.Callback());
  EXPECT_EQ(fires.shutdown.load(), 2);
}

// Many fetchers and appenders race; every waiter fires exactly once.
TEST(FetchWaitersTest, ConcurrentWaitsAndAppendsNeverLoseOrDoubleFire) {
  FetchWaiters waiters;
  std::vector<std::shared_ptr<Partition>> parts;
  for (int i = 0; i < 4; ++i) parts.push_back(MakePartition(&waiters, i));
  constexpr int kThreads = 4, kPerThread = 300;
  std::vector<std::atomic<int>> counts(kThreads * kPerThread);
  std::atomic<bool> stop{false};
  std::vector<std::thread> appenders;
  for (int i = 0; i < 2; ++i) {
    appenders.emplace_back([&, i] {
      while (!stop) Append(*parts[(i * 7 + std::rand()) % parts.size()]);
    });
  }
  std::vector<std::thread> fetchers;
  for (int t = 0; t < kThreads; ++t) {
    fetchers.emplace_back([&, t] {
      for (int k = 0; k < kPerThread; ++k) {
        auto& p = parts[(t + k) % parts.size()];
        int slot = t * kPerThread + k;
        waiters.Wait({{p, p->high_watermark()}}, Clock::now() + std::chrono::milliseconds(k % 20),
                     [&counts, slot](WakeReason) { ++counts[slot]; });
      }
    });
  }
  for (auto& f : fetchers) f.join();
  std::this_thread::sleep_for(50ms);
  stop = true;
  for (auto& a : appenders) a.join();
  ASSERT_TRUE(WaitFor([&] { return waiters.pending() == 0; }));
  std::this_thread::sleep_for(30ms);
  for (size_t i = 0; i < counts.size(); ++i) ASSERT_EQ(counts[i].load(), 1) << "waiter " << i;
}

}  // namespace
}  // namespace headrace::broker
