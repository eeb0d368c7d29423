// Quota throttling in the server (Reply::throttle_ms, event_loop_throttle.cc):
// the throttled reply leaves at once, and nothing more is read or dispatched
// from that connection until the throttle time has passed; other
// connections are not held up. Run for both backends (ServerTest is
// instantiated for each in server_test.cc).
#include <gtest/gtest.h>

#include <chrono>

#include "net/server.h"
#include "net/server_test_util.h"

namespace headrace::net {
namespace {

using namespace std::chrono_literals;
using namespace test;
using Clock = std::chrono::steady_clock;

TEST_P(ServerTest, ThrottledReplyIsSentAtOnceAndMutesTheConnection) {
  StartServer();
  Client c(port());
  const auto start = Clock::now();
  ASSERT_TRUE(c.SendRaw(Frame("T0400first") + Frame("Esecond")));
  EXPECT_EQ(c.Recv(), "first");
  EXPECT_LT(Clock::now() - start, 300ms);  // not delayed by its own throttle
  std::this_thread::sleep_for(150ms);
  EXPECT_EQ(handler_.handled(), 1);  // the second request waits, unread
  Client other(port());
  ASSERT_TRUE(other.Send("Eother"));
  EXPECT_EQ(other.Recv(), "Eother");  // other connections are served
  EXPECT_EQ(c.Recv(), "Esecond");
  EXPECT_GE(Clock::now() - start, 390ms);
}

TEST_P(ServerTest, ALaterThrottledReplyMutesAgain) {
  StartServer();
  Client c(port());
  const auto start = Clock::now();
  ASSERT_TRUE(c.Send("T0100a"));
  EXPECT_EQ(c.Recv(), "a");
  std::this_thread::sleep_for(150ms);  // throttle over
  ASSERT_TRUE(c.SendRaw(Frame("T0300b") + Frame("Ec")));
  EXPECT_EQ(c.Recv(), "b");
  EXPECT_EQ(c.Recv(), "Ec");
  EXPECT_GE(Clock::now() - start, 440ms);
}

}  // namespace
}  // namespace headrace::net
