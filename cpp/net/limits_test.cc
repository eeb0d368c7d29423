// Unit tests of the pieces behind the server's limits: EventSummary,
// ConnectionLimits, RequestMemory.
#include <gtest/gtest.h>

#include "net/connection_limits.h"
#include "net/event_summary.h"
#include "net/request_memory.h"

namespace headrace::net {
namespace {

using namespace std::chrono_literals;
using Clock = EventSummary::Clock;

TEST(EventSummaryTest, FirstEventIsLoggedThenOthersAreCountedOncePerInterval) {
  EventSummary s("bad things", 10s);
  Clock::time_point t0 = Clock::now();
  EXPECT_TRUE(s.Record(t0, 1, "first from a"));
  EXPECT_FALSE(s.Record(t0 + 1s, 2, "second from b"));
  EXPECT_FALSE(s.Record(t0 + 2s, 3, "third from c"));
  EXPECT_EQ(s.TakeSummary(t0 + 9s), "");  // the interval has not passed
  EXPECT_EQ(s.TakeSummary(t0 + 10s),
            "2 bad things from 2 connections in the last 10 s; last: third from c");
  EXPECT_EQ(s.TakeSummary(t0 + 30s), "");  // nothing new
  // Quiet for a whole interval since the summary: logged at once again.
  EXPECT_TRUE(s.Record(t0 + 30s, 3, "again"));
}

TEST(EventSummaryTest, EventsWithoutASourceAreNotCountedAsConnections) {
  EventSummary s("failed accepts", 500ms);
  Clock::time_point t0 = Clock::now();
  EXPECT_TRUE(s.Record(t0, 0, "x"));
  EXPECT_FALSE(s.Record(t0, 0, "Too many open files"));
  EXPECT_EQ(s.TakeSummary(t0 + 600ms),
            "1 failed accepts in the last 600 ms; last: Too many open files");
}

TEST(ConnectionLimitsTest, CountsPerIpAndInTotal) {
  ConnectionLimits limits(3, 2);
  using V = ConnectionLimits::Verdict;
  EXPECT_EQ(limits.Admit("10.0.0.1"), V::kAdmitted);
  EXPECT_EQ(limits.Admit("10.0.0.1"), V::kAdmitted);
  EXPECT_EQ(limits.Admit("10.0.0.1"), V::kOverPerIp);
  EXPECT_EQ(limits.Admit("10.0.0.2"), V::kAdmitted);
  EXPECT_EQ(limits.Admit("10.0.0.3"), V::kOverTotal);
  EXPECT_EQ(limits.active(), 3);
  limits.Release("10.0.0.1");
  EXPECT_EQ(limits.active_from("10.0.0.1"), 1);
  EXPECT_EQ(limits.Admit("10.0.0.1"), V::kAdmitted);
  limits.Release("10.0.0.2");
  EXPECT_EQ(limits.active_from("10.0.0.2"), 0);
}

TEST(ConnectionLimitsTest, NoLimitsAndAZeroPerIpLimit) {
  ConnectionLimits unlimited(0, -1);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(unlimited.Admit("a"), ConnectionLimits::Verdict::kAdmitted);
  ConnectionLimits none(0, 0);
  EXPECT_EQ(none.Admit("a"), ConnectionLimits::Verdict::kOverPerIp);
}

TEST(ConnectionLimitsTest, IpOfPeer) {
  EXPECT_EQ(IpOfPeer("127.0.0.1:5555"), "127.0.0.1");
  EXPECT_EQ(IpOfPeer("[::1]:5555"), "::1");
  EXPECT_EQ(IpOfPeer("?"), "?");
}

TEST(RequestMemoryTest, ReservesUnderTheCapOrWhenNothingIsHeld) {
  RequestMemory m(1000);
  EXPECT_TRUE(m.TryReserve(5000));  // alone: larger than the cap is fine
  EXPECT_TRUE(m.Full());
  EXPECT_FALSE(m.TryReserve(1));
  m.Release(5000);
  EXPECT_TRUE(m.TryReserve(900));
  EXPECT_FALSE(m.TryReserve(200));
  EXPECT_TRUE(m.TryReserve(100));
  EXPECT_TRUE(m.Full());
  m.Charge(50);  // bytes already read are counted even over the cap
  EXPECT_EQ(m.held(), 1050);
  m.Release(1050);
  EXPECT_FALSE(m.Full());
}

TEST(RequestMemoryTest, UnlimitedIsNeverFull) {
  RequestMemory m(0);
  EXPECT_FALSE(m.limited());
  EXPECT_FALSE(m.Full());
}

}  // namespace
}  // namespace headrace::net
