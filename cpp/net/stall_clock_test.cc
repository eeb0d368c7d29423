#include "net/stall_clock.h"

#include <gtest/gtest.h>

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace headrace::net {
namespace {

using std::chrono::milliseconds;

void Spin(milliseconds d) {
  auto end = std::chrono::steady_clock::now() + d;
  volatile uint64_t x = 0;
  while (std::chrono::steady_clock::now() < end) x = x + 1;
}

TEST(StallClockTest, ATurnThatSleepsIsAStall) {
  StallClock clock;
  clock.TurnBegins();
  std::this_thread::sleep_for(milliseconds(40));  // blocks: a voluntary switch
  auto s = clock.TurnEnds();
  ASSERT_TRUE(s.has_value());
  EXPECT_GE(s->off_cpu, milliseconds(30));
  EXPECT_GE(s->wall, s->off_cpu);
}

TEST(StallClockTest, AShortOrBusyTurnIsNot) {
  StallClock clock;
  const auto begin = std::chrono::steady_clock::now();
  clock.TurnBegins();
  std::this_thread::sleep_for(milliseconds(2));
  const bool stall = clock.TurnEnds().has_value();
  // A loaded machine may give the CPU back late after the sleep: that wait
  // is run-queue delay, not blocking, where schedstat is readable; without
  // it (getrusage) the clock counts it. Only a turn that really ended
  // within the threshold must not be a stall.
  if (std::chrono::steady_clock::now() - begin < StallClock::kThreshold) EXPECT_FALSE(stall);
  // On CPU all along: preemption on a loaded machine is off CPU but not blocked.
  clock.TurnBegins();
  Spin(milliseconds(30));
  EXPECT_FALSE(clock.TurnEnds().has_value());
}

// Two threads pinned to one core, both spinning: a turn that spins for 60 ms
// of wall time spends about half of it waiting in the run queue, after a
// 1 ms sleep (a real, short block). The run-queue wait is preemption, not a blocking
// call: no stall (where schedstat is readable). Counted as wall minus CPU
// time with a voluntary switch, as before schedstat, each turn was one.
TEST(StallClockTest, ATurnThatOnlyWaitedForACpuIsNot) {
  if (::access("/proc/thread-self/schedstat", R_OK) != 0) GTEST_SKIP() << "no schedstat";
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu() < 0 ? 0 : sched_getcpu(), &one);
  auto pin = [&] { pthread_setaffinity_np(pthread_self(), sizeof(one), &one); };
  std::atomic<bool> stop{false};
  std::thread rival([&] {
    pin();
    while (!stop.load()) Spin(milliseconds(1));
  });
  std::thread measured([&] {
    pin();
    StallClock clock;
    for (int i = 0; i < 3; ++i) {
      clock.TurnBegins();
      const auto begin = std::chrono::steady_clock::now();
      std::this_thread::sleep_for(milliseconds(1));
      Spin(milliseconds(60));  // wall time: at least 60 ms, half of it queued
      auto s = clock.TurnEnds();
      EXPECT_FALSE(s.has_value()) << "off CPU " << s->off_cpu.count() << " us, run delay "
                                  << s->run_delay.count() << " us of a "
                                  << std::chrono::duration_cast<std::chrono::microseconds>(
                                         std::chrono::steady_clock::now() - begin).count()
                                  << " us turn";
    }
  });
  measured.join();
  stop = true;
  rival.join();
}

TEST(StallClockTest, NothingBeforeTheFirstTurnOrTwiceForOne) {
  StallClock clock;
  EXPECT_FALSE(clock.TurnEnds().has_value());
  clock.TurnBegins();
  std::this_thread::sleep_for(milliseconds(20));
  EXPECT_TRUE(clock.TurnEnds().has_value());
  EXPECT_FALSE(clock.TurnEnds().has_value());
}

TEST(StallCountersTest, SumsAndKeepsTheLongest) {
  StallCounters c;
  c.Add({std::chrono::microseconds(15000), std::chrono::microseconds(16000)});
  c.Add({std::chrono::microseconds(40000), std::chrono::microseconds(41000),
         std::chrono::microseconds(1000)});
  c.Add({std::chrono::microseconds(12000), std::chrono::microseconds(12000)});
  StallCounters::Totals t = c.totals();
  EXPECT_EQ(t.stalls, 3u);
  EXPECT_EQ(t.off_cpu_us, 67000);
  EXPECT_EQ(t.max_off_cpu_us, 40000);
}

}  // namespace
}  // namespace headrace::net
