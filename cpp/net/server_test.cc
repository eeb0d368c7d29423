// End-to-end tests of the Server on real sockets (127.0.0.1), run for both
// backends (the test handler's commands: server_test_util.h).
#include "net/server.h"

#include "net/server_test_util.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/test_file.h"

namespace headrace::net {
namespace {

using namespace std::chrono_literals;
using namespace test;

TEST_P(ServerTest, EchoRoundTrip) {
  StartServer();
  ASSERT_NE(port(), 0);
  Client c(port());
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(c.Send("Ehello"));
  EXPECT_EQ(c.Recv(), "Ehello");
  ASSERT_TRUE(c.Send("Eagain"));
  EXPECT_EQ(c.Recv(), "Eagain");
}

TEST_P(ServerTest, PipelinedRepliesKeepRequestOrderWhenCompletedOutOfOrder) {
  StartServer();
  Client c(port());
  // One write; the later requests complete first, on other threads.
  ASSERT_TRUE(c.SendRaw(Frame("D0300first") + Frame("D0150second") + Frame("D0000third") +
                        Frame("Efourth") + Frame("D0050fifth")));
  EXPECT_EQ(c.Recv(), "first");
  EXPECT_EQ(c.Recv(), "second");
  EXPECT_EQ(c.Recv(), "third");
  EXPECT_EQ(c.Recv(), "Efourth");
  EXPECT_EQ(c.Recv(), "fifth");
}

TEST_P(ServerTest, FileSliceRepliesCarryExactFileBytes) {
  std::string content(8 << 20, '\0');
  for (size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>((i * 131) >> 3);
  char path[] = "/tmp/headrace_net_XXXXXX";
  int fd = mkstemp(path);
  unlink(path);
  ASSERT_EQ(write(fd, content.data(), content.size()), static_cast<ssize_t>(content.size()));
  handler_.file_body_ = [fd] {
    OutputBuffer b;
    b.Append("hdr", 3);
    b.AppendSlice(FileSlice{fd, FilePosition(0), 3 << 20, nullptr});
    b.Append("mid", 3);
    b.AppendSlice(FileSlice{fd, FilePosition(3 << 20), 5 << 20, nullptr});
    return b;
  };
  StartServer();
  Client c(port());
  ASSERT_TRUE(c.SendRaw(Frame("F") + Frame("Eafter")));
  std::optional<std::string> got = c.Recv();
  ASSERT_TRUE(got.has_value());
  std::string expect = "hdr" + content.substr(0, 3 << 20) + "mid" + content.substr(3 << 20);
  EXPECT_TRUE(*got == expect) << "size " << got->size() << " vs " << expect.size();
  EXPECT_EQ(c.Recv(), "Eafter");
  server_->Stop();
  close(fd);
}

TEST_P(ServerTest, SlowReaderPausesReadingUntilOutputDrains) {
  std::string content(4 << 20, '\0');
  for (size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>(i % 251);
  char path[] = "/tmp/headrace_net_XXXXXX";
  int fd = mkstemp(path);
  unlink(path);
  ASSERT_EQ(write(fd, content.data(), content.size()), static_cast<ssize_t>(content.size()));
  handler_.file_body_ = [fd, n = static_cast<int64_t>(content.size())] {
    OutputBuffer b;
    b.AppendSlice(FileSlice{fd, FilePosition(0), n, nullptr});
    return b;
  };
  ServerOptions o = Options();
  o.max_unsent_bytes_per_connection = 64 * 1024;
  o.send_buffer_bytes = 64 * 1024;
  StartServer(o);
  Client c(port());
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(c.Send("F"));
    std::this_thread::sleep_for(30ms);
  }
  // The first reply cannot drain while the client does not read.
  EXPECT_LE(handler_.handled(), 2);
  for (int i = 0; i < 5; ++i) {
    std::optional<std::string> got = c.Recv();
    ASSERT_TRUE(got.has_value());
    EXPECT_TRUE(*got == content) << i;
  }
  EXPECT_EQ(handler_.handled(), 5);
  server_->Stop();
  close(fd);
}

TEST_P(ServerTest, NoResponseAdvancesTheQueue) {
  StartServer();
  Client c(port());
  ASSERT_TRUE(c.SendRaw(Frame("N") + Frame("D0050late") + Frame("N") + Frame("Enext")));
  EXPECT_EQ(c.Recv(), "late");
  EXPECT_EQ(c.Recv(), "Enext");
}

TEST_P(ServerTest, CloseWritesEarlierRepliesThenCloses) {
  StartServer();
  Client c(port());
  ASSERT_TRUE(c.SendRaw(Frame("D0100before") + Frame("Cclient asked") + Frame("Eignored")));
  EXPECT_EQ(c.Recv(), "before");
  EXPECT_TRUE(c.WaitClosed());
  EXPECT_TRUE(WaitFor([&] { return handler_.closes() == 1; }));
}

TEST_P(ServerTest, BadSizesCloseOnlyThatConnection) {
  ServerOptions o = Options();
  o.max_request_bytes = 1 << 20;
  o.error_summary_interval = 300ms;
  StartServer(o);
  Client good(port());
  ASSERT_TRUE(good.Send("Ebefore"));
  EXPECT_EQ(good.Recv(), "Ebefore");
  ::testing::internal::CaptureStderr();
  for (uint32_t prefix : {0x7fffffffu, (1u << 20) + 1, 0u, 0xffffffffu}) {
    Client bad(port());
    ASSERT_TRUE(bad.SendRaw(Prefix(prefix) + "xxxx"));
    EXPECT_TRUE(bad.WaitClosed()) << prefix;
  }
  EXPECT_TRUE(WaitFor([&] { return handler_.closes() == 4; }));
  std::this_thread::sleep_for(1500ms);  // a tick after the interval: the summary
  std::string log = ::testing::internal::GetCapturedStderr();
  // The first one at once, the other three in one summary line.
  EXPECT_NE(log.find("request size 2147483647 exceeds socket.request.max.bytes 1048576"),
            std::string::npos) << log;
  EXPECT_NE(log.find("3 malformed or refused requests from 3 connections in the last "),
            std::string::npos) << log;
  EXPECT_NE(log.find("; last: invalid request size -1 from 127.0.0.1:"), std::string::npos) << log;
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 2) << log;
  ASSERT_TRUE(good.Send("Eafter"));
  EXPECT_EQ(good.Recv(), "Eafter");
}

TEST_P(ServerTest, TruncatedFrameThenDisconnect) {
  StartServer();
  Client other(port());
  {
    Client c(port());
    ASSERT_TRUE(c.SendRaw(Prefix(100) + "only ten b"));
  }
  EXPECT_TRUE(WaitFor([&] { return handler_.closes() == 1; }));
  EXPECT_EQ(handler_.handled(), 0);
  ASSERT_TRUE(other.Send("Estill here"));
  EXPECT_EQ(other.Recv(), "Estill here");
  EXPECT_TRUE(WaitFor([&] { return server_->active_connections() == 1; }));
}

TEST_P(ServerTest, LargeRequestGrowsTheReadBuffer) {
  StartServer();
  Client c(port());
  std::string big = "E" + std::string(5 << 20, 'q');
  std::thread sender([&] { c.Send(big); });
  std::optional<std::string> got = c.Recv();
  sender.join();
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(*got == big);
}

TEST_P(ServerTest, TwoHundredConcurrentConnections) {
  StartServer();
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < 200; ++i) {
    clients.push_back(std::make_unique<Client>(port()));
    ASSERT_TRUE(clients.back()->connected());
  }
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(clients[i]->Send("E" + std::to_string(i)));
  for (int i = 0; i < 200; ++i) EXPECT_EQ(clients[i]->Recv(), "E" + std::to_string(i));
  EXPECT_EQ(server_->active_connections(), 200);
}

TEST_P(ServerTest, MaxConnectionsIsEnforced) {
  ServerOptions o = Options();
  o.max_connections = 2;
  StartServer(o);
  auto a = std::make_unique<Client>(port());
  Client b(port());
  ASSERT_TRUE(a->Send("Ea"));
  ASSERT_TRUE(b.Send("Eb"));
  EXPECT_EQ(a->Recv(), "Ea");
  EXPECT_EQ(b.Recv(), "Eb");
  Client over(port());
  EXPECT_TRUE(over.WaitClosed());
  a.reset();
  EXPECT_TRUE(WaitFor([&] { return server_->active_connections() == 1; }));
  Client d(port());
  ASSERT_TRUE(d.Send("Ed"));
  EXPECT_EQ(d.Recv(), "Ed");
}

TEST_P(ServerTest, InFlightLimitPausesReading) {
  ServerOptions o = Options();
  o.max_in_flight_per_connection = 4;
  StartServer(o);
  Client c(port());
  std::string burst;
  for (int i = 0; i < 10; ++i) burst += Frame("H");
  ASSERT_TRUE(c.SendRaw(burst));
  ASSERT_TRUE(WaitFor([&] { return handler_.handled() == 4; }));
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(handler_.handled(), 4);
  int answered = 0;
  while (answered < 10) {
    std::vector<Responder> held = handler_.TakeHeld();
    for (auto& r : held) r(Reply::Respond(Bytes("R" + std::to_string(answered++))));
    std::this_thread::sleep_for(5ms);
    ASSERT_LE(handler_.handled(), answered + 4);
  }
  for (int i = 0; i < 10; ++i) EXPECT_EQ(c.Recv(), "R" + std::to_string(i));
}

TEST_P(ServerTest, StopWaitsForInFlightReplyWithinGrace) {
  StartServer();
  Client c(port());
  ASSERT_TRUE(c.Send("D0300slow"));
  ASSERT_TRUE(WaitFor([&] { return handler_.handled() == 1; }));
  auto t0 = std::chrono::steady_clock::now();
  server_->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 4s);
  EXPECT_EQ(c.Recv(), "slow");
  EXPECT_TRUE(c.WaitClosed());
  EXPECT_EQ(handler_.closes(), 1);
}

TEST_P(ServerTest, ResponderAfterStopAndDestructionIsHarmless) {
  ServerOptions o = Options();
  o.shutdown_grace = 100ms;
  StartServer(o);
  Client c(port());
  ASSERT_TRUE(c.SendRaw(Frame("H") + Frame("H")));
  ASSERT_TRUE(WaitFor([&] { return handler_.handled() == 2; }));
  std::vector<Responder> held = handler_.TakeHeld();
  ASSERT_EQ(held.size(), 2u);
  server_->Stop();
  EXPECT_TRUE(c.WaitClosed());
  held[0](Reply::Respond(Bytes("too late")));
  server_.reset();
  held[1](Reply::Respond(Bytes("later still")));
}

TEST_P(ServerTest, StartFailsWhenAddressInUse) {
  StartServer();
  ServerOptions o = Options();
  o.listeners = {{"127.0.0.1", 0, "first"}, {"127.0.0.1", port(), "PLAINTEXT://taken"}};
  Server second(o, &handler_);
  Status st = second.Start();
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("in use"), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find("listener PLAINTEXT://taken"), std::string::npos) << st.ToString();
}

TEST_P(ServerTest, RestartsAfterStop) {
  StartServer();
  server_->Stop();
  ASSERT_TRUE(server_->Start().ok());
  Client c(port());
  ASSERT_TRUE(c.Send("Eagain"));
  EXPECT_EQ(c.Recv(), "Eagain");
}

// The names of this process's threads.
std::vector<std::string> ThreadNames() {
  std::vector<std::string> names;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    names.push_back(name);
  }
  return names;
}

// The I/O threads are named hr-net-<index> (for top -H, perf, schedstat).
TEST_P(ServerTest, IoThreadsAreNamed) {
  StartServer();  // 2 I/O threads
  std::vector<std::string> names = ThreadNames();
  EXPECT_EQ(std::count(names.begin(), names.end(), "hr-net-0"), 1);
  EXPECT_EQ(std::count(names.begin(), names.end(), "hr-net-1"), 1);
  // And they still serve.
  Client c(port());
  ASSERT_TRUE(c.Send("Enamed"));
  EXPECT_EQ(c.Recv(), "Enamed");
}

// A file range not in the page cache is read by a loader thread, not by
// the I/O thread's sendfile: the loop serves its other connections
// meanwhile, and the connection's later replies still follow it.
TEST_P(ServerTest, FileRangesNotCachedAreLoadedOffTheLoopInOrder) {
  std::string content(8 << 20, '\0');
  for (size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>((i * 7) >> 2);
  testing::TestFile file(content);
  bool evicted = file.Evict();
  int fd = file.fd();
  handler_.file_body_ = [fd, n = static_cast<int64_t>(content.size())] {
    OutputBuffer b;
    b.Append("hdr", 3);
    b.AppendSlice(FileSlice{fd, FilePosition(0), n, nullptr});
    return b;
  };
  ServerOptions o = Options();
  o.io_threads = 1;
  StartServer(o);
  Client a(port()), b(port());
  ASSERT_TRUE(a.SendRaw(Frame("F") + Frame("Eafter")));
  ASSERT_TRUE(b.Send("Eother"));
  EXPECT_EQ(b.Recv(), "Eother");
  std::optional<std::string> got = a.Recv();
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(*got == "hdr" + content) << "size " << got->size();
  EXPECT_EQ(a.Recv(), "Eafter");
  if (evicted) {
    std::vector<std::string> names = ThreadNames();
    EXPECT_EQ(std::count(names.begin(), names.end(), "hr-net-load-0"), 1);
  }
  server_->Stop();
}

TEST_P(ServerTest, ConnectionClosedWhileItsFileRangeLoadsIsHarmless) {
  std::string content(32 << 20, 'c');
  testing::TestFile file(content);
  file.Evict();
  int fd = file.fd();
  handler_.file_body_ = [fd, n = static_cast<int64_t>(content.size())] {
    OutputBuffer b;
    b.AppendSlice(FileSlice{fd, FilePosition(0), n, nullptr});
    return b;
  };
  ServerOptions o = Options();
  o.io_threads = 1;
  StartServer(o);
  {
    Client a(port());
    ASSERT_TRUE(a.Send("F"));
    ASSERT_TRUE(WaitFor([&] { return handler_.handled() == 1; }));
  }  // closed, most likely while the range is being read
  Client b(port());
  ASSERT_TRUE(b.Send("Estill"));
  EXPECT_EQ(b.Recv(), "Estill");
  EXPECT_TRUE(WaitFor([&] { return handler_.closes() == 1; }));
  server_->Stop();
}

TEST(ServerOptionsTest, ParseBackendAndAutoChoice) {
  EXPECT_EQ(ParseBackend("auto").value(), Backend::kAuto);
  EXPECT_EQ(ParseBackend("io_uring").value(), Backend::kIoUring);
  EXPECT_EQ(ParseBackend("epoll").value(), Backend::kEpoll);
  EXPECT_FALSE(ParseBackend("kqueue").ok());
  TestHandler handler;
  ServerOptions o;
  o.listeners = {{"127.0.0.1", 0, ""}};
  o.io_threads = 1;
  Server server(o, &handler);
  ASSERT_TRUE(server.Start().ok());
  EXPECT_EQ(server.backend(), IoUringAvailable() ? Backend::kIoUring : Backend::kEpoll);
}

INSTANTIATE_TEST_SUITE_P(Backends, ServerTest,
                         ::testing::Values(Backend::kEpoll, Backend::kIoUring), BackendParamName);

}  // namespace
}  // namespace headrace::net
