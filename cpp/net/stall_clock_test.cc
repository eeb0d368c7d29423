#include "net/stall_clock.h"

#include <gtest/gtest.h>

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
  EXPECT_GE(s->voluntary, 1);
}

TEST(StallClockTest, AShortOrBusyTurnIsNot) {
  StallClock clock;
  const auto begin = std::chrono::steady_clock::now();
  clock.TurnBegins();
  std::this_thread::sleep_for(milliseconds(2));
  const bool stall = clock.TurnEnds().has_value();
  // A loaded machine may give the CPU back late after the sleep: the thread
  // is then off CPU for longer than the threshold, which the clock counts
  // (it cannot tell a run-queue wait from a blocked one). Only a turn that
  // really ended within the threshold must not be a stall.
  if (std::chrono::steady_clock::now() - begin < StallClock::kThreshold) EXPECT_FALSE(stall);
  // On CPU all along: preemption on a loaded machine is off CPU but involuntary.
  clock.TurnBegins();
  Spin(milliseconds(30));
  EXPECT_FALSE(clock.TurnEnds().has_value());
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
  c.Add({std::chrono::microseconds(15000), std::chrono::microseconds(16000), 1, 0});
  c.Add({std::chrono::microseconds(40000), std::chrono::microseconds(41000), 2, 1});
  c.Add({std::chrono::microseconds(12000), std::chrono::microseconds(12000), 1, 0});
  StallCounters::Totals t = c.totals();
  EXPECT_EQ(t.stalls, 3u);
  EXPECT_EQ(t.off_cpu_us, 67000);
  EXPECT_EQ(t.max_off_cpu_us, 40000);
}

}  // namespace
}  // namespace headrace::net
