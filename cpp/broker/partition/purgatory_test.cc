#include "broker/partition/purgatory.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "broker/partition/fake_log_test_util.h"
#include "broker/base/serial_executor.h"

namespace headrace::broker {
namespace {

using namespace std::chrono_literals;
using testing::FakeBatch;
using testing::FakeLog;
using Clock = Purgatory::Clock;

std::shared_ptr<Partition> MakePartition(PartitionListener* listener, int32_t id = 0) {
  PartitionServices services;
  services.listener = listener;
  return std::make_shared<Partition>(TopicPartition{"t", id}, Uuid::Random(),
                                     std::make_unique<FakeLog>(), TopicSettings{}, services);
}

void Append(Partition& p) {
  std::string b = FakeBatch(1);
  ASSERT_TRUE(p.AppendAsLeader({reinterpret_cast<uint8_t*>(b.data()), b.size()}).ok());
}

// Waits for the high watermark to pass what `p` has now.
Purgatory::Watch NextHw(const std::shared_ptr<Partition>& p) {
  return {p, Watermark::kHighWatermark, p->high_watermark() + 1};
}

// Counts fires per reason; safe from any thread.
struct Fires {
  std::atomic<int> data{0}, deadline{0}, shutdown{0};
  Purgatory::Callback Callback() {
    return [this](WakeReason r) {
      if (r == WakeReason::kReady) ++data;
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

TEST(PurgatoryTest, AppendFromAnotherThreadFiresOnceWithData) {
  Purgatory waiters;
  auto p = MakePartition(&waiters);
  Fires fires;
  uint64_t id = waiters.Wait({NextHw(p)}, Clock::now() + 300ms, nullptr, fires.Callback());
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

TEST(PurgatoryTest, DeadlineFiresOnceOnTheTimerThread) {
  Purgatory waiters;
  auto p = MakePartition(&waiters);
  Fires fires;
  auto start = Clock::now();
  std::atomic<bool> other_thread{false};
  auto caller = std::this_thread::get_id();
  waiters.Wait({NextHw(p)}, start + 50ms, nullptr, [&](WakeReason r) {
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

TEST(PurgatoryTest, LaterDeadlinesDoNotWakeTheTimerButEarlierOnesFireOnTime) {
  Purgatory waiters;
  auto p = MakePartition(&waiters);
  Fires first;
  waiters.Wait({NextHw(p)}, Clock::now() + 10s, nullptr, first.Callback());
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
    uint64_t id = waiters.Wait({NextHw(p)}, Clock::now() + 11s, nullptr, f.Callback());
    ASSERT_NE(id, 0u);
    Append(*p);
    ASSERT_EQ(f.data.load(), 1);
  }
  EXPECT_EQ(waiters.timer_wakeups(), before);
  // An earlier deadline still wakes it and fires on time.
  Fires fast;
  auto start = Clock::now();
  waiters.Wait({NextHw(p)}, start + 30ms, nullptr, fast.Callback());
  ASSERT_TRUE(WaitFor([&] { return fast.total() == 1; }));
  EXPECT_EQ(fast.deadline.load(), 1);
  EXPECT_GE(Clock::now() - start, 30ms);
  EXPECT_LT(Clock::now() - start, 3s);
  EXPECT_GT(waiters.timer_wakeups(), before);
}

TEST(PurgatoryTest, DataThatArrivedBeforeWaitFiresImmediately) {
  Purgatory waiters;
  auto p = MakePartition(&waiters);
  Offset seen = p->high_watermark();
  Append(*p);  // lands between the fetch's read and its Wait
  Fires fires;
  EXPECT_EQ(waiters.Wait({{p, Watermark::kHighWatermark, seen + 1}}, Clock::now() + 10s, nullptr, fires.Callback()), 0u);
  EXPECT_EQ(fires.data.load(), 1);
  EXPECT_EQ(waiters.pending(), 0u);
}

TEST(PurgatoryTest, WatchesSeveralPartitionsAndCancel) {
  Purgatory waiters;
  auto a = MakePartition(&waiters, 0);
  auto b = MakePartition(&waiters, 1);
  Fires fires, cancelled;
  waiters.Wait({NextHw(a), NextHw(b)}, Clock::now() + 10s, nullptr, fires.Callback());
  uint64_t c = waiters.Wait({NextHw(a)}, Clock::now() + 10s, nullptr, cancelled.Callback());
  EXPECT_TRUE(waiters.Cancel(c));
  Append(*b);
  EXPECT_EQ(fires.data.load(), 1);
  Append(*a);
  EXPECT_EQ(fires.total(), 1);
  EXPECT_EQ(cancelled.total(), 0);
}

TEST(PurgatoryTest, ShutdownFiresPendingAndLaterWaits) {
  Fires fires;
  auto waiters = std::make_unique<Purgatory>();
  auto p = MakePartition(waiters.get());
  waiters->Wait({NextHw(p)}, Clock::now() + 10s, nullptr, fires.Callback());
  waiters->Shutdown();
  EXPECT_EQ(fires.shutdown.load(), 1);
  waiters->Wait({NextHw(p)}, Clock::now() + 10s, nullptr, fires.Callback());
  EXPECT_EQ(fires.shutdown.load(), 2);
}

// Many fetchers and appenders race; every waiter fires exactly once.
TEST(PurgatoryTest, ConcurrentWaitsAndAppendsNeverLoseOrDoubleFire) {
  Purgatory waiters;
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
        waiters.Wait({NextHw(p)}, Clock::now() + std::chrono::milliseconds(k % 20), nullptr,
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

TEST(PurgatoryTest, CompletionRunsOnTheWaitersExecutorNotTheAppendingThread) {
  Purgatory waiters;
  auto p = MakePartition(&waiters);
  auto loop = std::make_shared<SerialExecutor>("hr-test-loop");
  std::atomic<bool> on_loop{false};
  std::atomic<int> fired{0};
  waiters.Wait({NextHw(p)}, Clock::now() + 10s, loop, [&](WakeReason r) {
    on_loop = std::this_thread::get_id() == loop->thread_id();
    EXPECT_EQ(r, WakeReason::kReady);
    ++fired;
  });
  Append(*p);  // on this thread
  ASSERT_TRUE(WaitFor([&] { return fired.load() == 1; }));
  EXPECT_TRUE(on_loop.load());
  // A deadline completes on the executor too, not on the timer thread.
  waiters.Wait({NextHw(p)}, Clock::now() + 20ms, loop, [&](WakeReason r) {
    on_loop = std::this_thread::get_id() == loop->thread_id() && r == WakeReason::kDeadline;
    ++fired;
  });
  ASSERT_TRUE(WaitFor([&] { return fired.load() == 2; }));
  EXPECT_TRUE(on_loop.load());
}

TEST(PurgatoryTest, WaitsForTheRequestedWatermarkAndThreshold) {
  Purgatory waiters;
  PartitionServices services;
  services.listener = &waiters;
  services.commit_requires_fsync = true;  // the HW follows the flushed offset
  auto log = std::make_unique<FakeLog>();
  FakeLog* raw = log.get();
  auto p = std::make_shared<Partition>(TopicPartition{"t", 0}, Uuid::Random(), std::move(log),
                                       TopicSettings{}, services);
  Fires leo, hw3;
  waiters.Wait({{p, Watermark::kLogEnd, Offset(2)}}, Clock::now() + 10s, nullptr, leo.Callback());
  waiters.Wait({{p, Watermark::kHighWatermark, Offset(3)}}, Clock::now() + 10s, nullptr,
               hw3.Callback());
  Append(*p);
  EXPECT_EQ(leo.total(), 0);  // LEO 1 < 2
  Append(*p);
  EXPECT_EQ(leo.data.load(), 1);
  Append(*p);
  EXPECT_EQ(p->high_watermark(), Offset(0));  // nothing flushed yet
  EXPECT_EQ(hw3.total(), 0);
  ASSERT_TRUE(p->FlushLog().ok());
  EXPECT_EQ(raw->flushes(), 1);
  EXPECT_EQ(p->high_watermark(), Offset(3));
  EXPECT_EQ(hw3.data.load(), 1);
}

TEST(PurgatoryTest, StateChangeWakesEveryWaiterOfThePartition) {
  Purgatory waiters;
  auto p = MakePartition(&waiters);
  auto other = MakePartition(&waiters, 1);
  Fires fires, untouched;
  waiters.Wait({NextHw(p)}, Clock::now() + 10s, nullptr, fires.Callback());
  waiters.Wait({{p, Watermark::kLogEnd, Offset(100)}}, Clock::now() + 10s, nullptr, fires.Callback());
  waiters.Wait({NextHw(other)}, Clock::now() + 10s, nullptr, untouched.Callback());
  waiters.OnStateChanged(*p);
  EXPECT_EQ(fires.data.load(), 2);
  EXPECT_EQ(untouched.total(), 0);
  EXPECT_EQ(waiters.pending(), 1u);
}

// The race a produce runs: it appends, the partition changes state (here it
// is closed; in the broker a failed fsync takes it offline) before the
// produce registers its wait. The state version read before the append makes
// Wait complete at once instead of at the deadline.
TEST(PurgatoryTest, StateChangeBeforeWaitCompletesAtOnce) {
  Purgatory waiters;
  auto p = MakePartition(&waiters);
  const uint64_t before = p->state_version();
  Purgatory::Watch watch = NextHw(p);
  watch.seen_state = before;
  ASSERT_TRUE(p->Close().ok());
  EXPECT_NE(p->state_version(), before);
  Fires fires, unchecked;
  EXPECT_EQ(waiters.Wait({watch}, Clock::now() + 10s, nullptr, fires.Callback()), 0u);
  EXPECT_EQ(fires.data.load(), 1);
  // Without a state version the same wait parks until its deadline.
  EXPECT_NE(waiters.Wait({NextHw(p)}, Clock::now() + 10s, nullptr, unchecked.Callback()), 0u);
  EXPECT_EQ(unchecked.total(), 0);
  EXPECT_EQ(waiters.pending(), 1u);
}

// Issue 37: an ISR change is not a state change. An acks=all produce parked
// on the HW keeps waiting under a grown ISR, completes when a shrunk ISR (or
// a follower's fetch) moves the HW past it, and only a real loss of
// leadership (here: becoming follower at a new epoch) wakes it early.
TEST(PurgatoryTest, AnIsrChangeDoesNotWakeAParkedProduceALeaderChangeDoes) {
  Purgatory waiters;
  auto p = MakePartition(&waiters);
  ASSERT_TRUE(p->BecomeLeader(LeaderEpoch(1), {0, 1, 2}, {0, 1}).ok());
  Append(*p);  // offset 0; the HW waits for broker 1
  Purgatory::Watch watch = NextHw(p);
  watch.seen_state = p->state_version();
  Fires fires;
  ASSERT_NE(waiters.Wait({watch}, Clock::now() + 10s, nullptr, fires.Callback()), 0u);
  const uint64_t state = p->state_version();
  ASSERT_TRUE(p->UpdateIsr({0, 1, 2}).ok());  // grown: nothing to complete
  EXPECT_EQ(p->state_version(), state);
  EXPECT_EQ(fires.total(), 0);
  ASSERT_TRUE(p->UpdateIsr({0, 2}).ok());  // 1 dropped: 2 still holds the HW back
  EXPECT_EQ(fires.total(), 0);
  EXPECT_EQ(p->high_watermark(), Offset(0));
  ASSERT_TRUE(p->UpdateIsr({0}).ok());  // shrunk to the leader: the HW moves
  EXPECT_EQ(p->high_watermark(), Offset(1));
  EXPECT_EQ(fires.data.load(), 1);
  EXPECT_EQ(p->state_version(), state);
  // A new leader epoch is a state change: a parked wait is woken.
  Append(*p);
  Purgatory::Watch second = NextHw(p);
  ASSERT_TRUE(p->UpdateIsr({0, 1}).ok());
  ASSERT_NE(waiters.Wait({second}, Clock::now() + 10s, nullptr, fires.Callback()), 0u);
  ASSERT_TRUE(p->BecomeFollower(LeaderEpoch(2), 1, {0, 1, 2}).ok());
  EXPECT_EQ(fires.data.load(), 2);
  EXPECT_NE(p->state_version(), state);
  EXPECT_EQ(waiters.pending(), 0u);
}

// 100,000 waiters over 100 partitions: each completes exactly once when its
// partition moves, and registering/completing them stays linear.
TEST(PurgatoryTest, HundredThousandWaitersCompleteExactlyOnce) {
  Purgatory waiters;
  constexpr int kPartitions = 100, kWaiters = 100000;
  std::vector<std::shared_ptr<Partition>> parts;
  for (int i = 0; i < kPartitions; ++i) parts.push_back(MakePartition(&waiters, i));
  std::vector<std::atomic<int>> counts(kWaiters);
  auto start = Clock::now();
  for (int i = 0; i < kWaiters; ++i) {
    waiters.Wait({NextHw(parts[i % kPartitions])}, Clock::now() + 60s, nullptr,
                 [&counts, i](WakeReason r) { counts[i] += r == WakeReason::kReady ? 1 : 100; });
  }
  auto registered = Clock::now();
  EXPECT_EQ(waiters.pending(), static_cast<size_t>(kWaiters));
  for (auto& p : parts) Append(*p);
  auto done = Clock::now();
  EXPECT_EQ(waiters.pending(), 0u);
  for (int i = 0; i < kWaiters; ++i) ASSERT_EQ(counts[i].load(), 1) << "waiter " << i;
  std::printf("100k waiters: register %.1f ms, complete %.1f ms\n",
              std::chrono::duration<double, std::milli>(registered - start).count(),
              std::chrono::duration<double, std::milli>(done - registered).count());
}

}  // namespace
}  // namespace headrace::broker
