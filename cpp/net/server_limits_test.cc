// The Server's limits on real sockets, for both backends: several
// listeners, max connections per IP, the idle timeout and the request
// memory cap (queued.max.request.bytes).
#include <gtest/gtest.h>

#include <algorithm>

#include "net/server.h"
#include "net/server_test_util.h"

namespace headrace::net {
namespace {

using namespace std::chrono_literals;
using namespace test;

class ServerLimitsTest : public ServerTest {};

TEST_P(ServerLimitsTest, AcceptsOnEveryListener) {
  ServerOptions o = Options();
  o.listeners = {{"127.0.0.1", 0, ""}, {"127.0.0.1", 0, ""}, {"127.0.0.1", 0, ""}};
  StartServer(o);
  ASSERT_EQ(server_->ports().size(), 3u);
  for (uint16_t p : server_->ports()) {
    Client c(p);
    ASSERT_TRUE(c.Send("Eport"));
    EXPECT_EQ(c.Recv(), "Eport") << p;
  }
}

TEST_P(ServerLimitsTest, ConnectionsOverThePerIpLimitAreClosedAndLoggedOnce) {
  ServerOptions o = Options();
  o.max_connections_per_ip = 1;
  StartServer(o);
  auto first = std::make_unique<Client>(port());
  ASSERT_TRUE(first->Send("Efirst"));
  EXPECT_EQ(first->Recv(), "Efirst");
  testing::internal::CaptureStderr();
  for (int i = 0; i < 3; ++i) {
    Client refused(port());
    EXPECT_TRUE(refused.WaitClosed()) << i;
  }
  std::string log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
  EXPECT_NE(log.find("max.connections.per.ip reached"), std::string::npos) << log;
  first.reset();
  EXPECT_TRUE(WaitFor([&] { return server_->active_connections() == 0; }));
  Client again(port());
  ASSERT_TRUE(again.Send("Eagain"));
  EXPECT_EQ(again.Recv(), "Eagain");
}

TEST_P(ServerLimitsTest, IdleConnectionsAreClosedButNotOnesWaitingForAReply) {
  ServerOptions o = Options();
  o.idle_timeout = 300ms;
  StartServer(o);
  Client idle(port());
  Client waiting(port());
  ASSERT_TRUE(idle.Send("Ehello"));
  EXPECT_EQ(idle.Recv(), "Ehello");
  ASSERT_TRUE(waiting.Send("H"));
  ASSERT_TRUE(WaitFor([&] { return handler_.handled() == 2; }));
  auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(idle.WaitClosed());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(server_->active_connections(), 1);  // the one with a request in flight
  auto held = handler_.TakeHeld();
  ASSERT_EQ(held.size(), 1u);
  held[0](Reply::Respond(Bytes("late")));
  EXPECT_EQ(waiting.Recv(), "late");
}

TEST_P(ServerLimitsTest, RequestMemoryCapMutesAConnectionUntilBytesAreReleased) {
  ServerOptions o = Options();
  o.max_queued_request_bytes = 1000;
  StartServer(o);
  Client holder(port());
  ASSERT_TRUE(holder.Send("H" + std::string(899, 'h')));  // 900 bytes held
  ASSERT_TRUE(WaitFor([&] { return handler_.handled() == 1; }));
  Client small(port());  // fits: 900 + 20 <= 1000
  ASSERT_TRUE(small.Send("E" + std::string(19, 's')));
  EXPECT_EQ(small.Recv()->size(), 20u);
  // 900 + 200 > 1000: once its size is known the rest is not read until the
  // holder is answered.
  Client big(port());
  std::string frame = Frame("E" + std::string(199, 'b'));
  ASSERT_TRUE(big.SendRaw(frame.substr(0, 50)));
  std::this_thread::sleep_for(100ms);
  ASSERT_TRUE(big.SendRaw(frame.substr(50)));
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(handler_.handled(), 2);
  auto held = handler_.TakeHeld();
  ASSERT_EQ(held.size(), 1u);
  held[0](Reply::Respond(Bytes("done")));
  EXPECT_EQ(holder.Recv(), "done");
  EXPECT_EQ(big.Recv()->size(), 200u);
}

TEST_P(ServerLimitsTest, OneRequestLargerThanTheMemoryCapPassesAlone) {
  ServerOptions o = Options();
  o.max_queued_request_bytes = 1000;
  StartServer(o);
  Client c(port());
  std::string body = "E" + std::string(200000, 'x');
  ASSERT_TRUE(c.Send(body));
  EXPECT_EQ(c.Recv(), body);
  ASSERT_TRUE(c.Send(body));  // and again: everything was released
  EXPECT_EQ(c.Recv(), body);
}

INSTANTIATE_TEST_SUITE_P(Backends, ServerLimitsTest,
                         ::testing::Values(Backend::kEpoll, Backend::kIoUring), BackendParamName);

}  // namespace
}  // namespace headrace::net
