// End-to-end tests of the Server on real sockets (127.0.0.1), run for both
// backends. The test handler reads a command from the first byte of each
// request:
//   E<text>            echo the whole request back at once
//   D<4-digit ms><text> answer <text> after a delay, from another thread
//   N                  no response;  C<why>  close the connection
//   F                  answer with file slices of a test's temp file
//   H                  hold the responder; the test answers later
#include "net/server.h"

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

std::string Prefix(uint32_t n) {
  return {static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8),
          static_cast<char>(n)};
}
std::string Frame(const std::string& body) {
  return Prefix(static_cast<uint32_t>(body.size())) + body;
}

OutputBuffer Bytes(const std::string& s) {
  OutputBuffer b;
  b.Append(s.data(), s.size());
  return b;
}

class TestHandler : public RequestHandler {
 public:
  ~TestHandler() override { JoinWorkers(); }

  void Handle(const ConnectionInfo& conn, std::span<uint8_t> frame, Responder respond) override {
    std::string req(reinterpret_cast<char*>(frame.data()), frame.size());
    handled_.fetch_add(1);
    switch (req[0]) {
      case 'E':
        respond(Reply::Respond(Bytes(req)));
        break;
      case 'D': {
        int ms = std::stoi(req.substr(1, 4));
        std::string text = req.substr(5);
        std::lock_guard<std::mutex> lock(mu_);
        workers_.emplace_back([ms, text, respond] {
          std::this_thread::sleep_for(std::chrono::milliseconds(ms));
          respond(Reply::Respond(Bytes(text)));
        });
        break;
      }
      case 'N':
        respond(Reply::NoResponse());
        break;
      case 'C':
        respond(Reply::Close(req.substr(1)));
        break;
      case 'F':
        respond(Reply::Respond(file_body_()));
        break;
      case 'H': {
        std::lock_guard<std::mutex> lock(mu_);
        held_.push_back(respond);
        break;
      }
    }
  }
  void OnClose(const ConnectionInfo&) override { closes_.fetch_add(1); }

  std::vector<Responder> TakeHeld() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::move(held_);
  }
  void JoinWorkers() {
    std::vector<std::thread> w;
    {
      std::lock_guard<std::mutex> lock(mu_);
      w.swap(workers_);
    }
    for (auto& t : w) t.join();
  }
  int handled() const { return handled_.load(); }
  int closes() const { return closes_.load(); }
  std::function<OutputBuffer()> file_body_;

 private:
  std::mutex mu_;
  std::vector<std::thread> workers_;
  std::vector<Responder> held_;
  std::atomic<int> handled_{0};
  std::atomic<int> closes_{0};
};

// A blocking client with a receive timeout, so a broken server fails a test
// instead of hanging it.
class Client {
 public:
  explicit Client(uint16_t port) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    timeval tv{10, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  ~Client() { Close(); }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }
  bool connected() const { return connected_; }
  bool SendRaw(const std::string& bytes) {
    size_t at = 0;
    while (at < bytes.size()) {
      ssize_t n = send(fd_, bytes.data() + at, bytes.size() - at, MSG_NOSIGNAL);
      if (n <= 0) return false;
      at += static_cast<size_t>(n);
    }
    return true;
  }
  bool Send(const std::string& body) { return SendRaw(Frame(body)); }
  bool ReadExact(char* p, size_t n) {
    while (n > 0) {
      ssize_t r = recv(fd_, p, n, 0);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return false;
      p += r;
      n -= static_cast<size_t>(r);
    }
    return true;
  }
  std::optional<std::string> Recv() {
    char pre[4];
    if (!ReadExact(pre, 4)) return std::nullopt;
    uint32_t n = (uint32_t{static_cast<uint8_t>(pre[0])} << 24) |
                 (uint32_t{static_cast<uint8_t>(pre[1])} << 16) |
                 (uint32_t{static_cast<uint8_t>(pre[2])} << 8) | uint32_t{static_cast<uint8_t>(pre[3])};
    std::string body(n, '\0');
    if (!ReadExact(body.data(), n)) return std::nullopt;
    return body;
  }
  // True when the server closed the connection (EOF or reset) in time.
  bool WaitClosed() {
    char c;
    ssize_t r = recv(fd_, &c, 1, 0);
    return r == 0 || (r < 0 && errno == ECONNRESET);
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

template <typename Pred>
bool WaitFor(Pred pred, std::chrono::milliseconds limit = 5s) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (pred()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return pred();
}

class ServerTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam() == Backend::kIoUring && !IoUringAvailable()) {
      GTEST_SKIP() << "io_uring not available here";
    }
  }
  void TearDown() override {
    if (server_) server_->Stop();
    handler_.JoinWorkers();
  }
  ServerOptions Options() {
    ServerOptions o;
    o.host = "127.0.0.1";
    o.port = 0;
    o.io_threads = 2;
    o.backend = GetParam();
    return o;
  }
  void StartServer(ServerOptions o) {
    server_ = std::make_unique<Server>(o, &handler_);
    Status st = server_->Start();
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_EQ(server_->backend(), GetParam());
  }
  void StartServer() { StartServer(Options()); }
  uint16_t port() const { return server_->port(); }

  TestHandler handler_;
  std::unique_ptr<Server> server_;
};

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
  std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("request size 2147483647 exceeds socket.request.max.bytes 1048576"),
            std::string::npos) << log;
  EXPECT_NE(log.find("invalid request size 0"), std::string::npos) << log;
  EXPECT_NE(log.find("invalid request size -1"), std::string::npos) << log;
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
  o.port = port();
  Server second(o, &handler_);
  Status st = second.Start();
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("in use"), std::string::npos) << st.ToString();
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
  o.host = "127.0.0.1";
  o.port = 0;
  o.io_threads = 1;
  Server server(o, &handler);
  ASSERT_TRUE(server.Start().ok());
  EXPECT_EQ(server.backend(), IoUringAvailable() ? Backend::kIoUring : Backend::kEpoll);
}

INSTANTIATE_TEST_SUITE_P(Backends, ServerTest,
                         ::testing::Values(Backend::kEpoll, Backend::kIoUring),
                         [](const auto& info) {
                           return std::string(info.param == Backend::kEpoll ? "epoll" : "io_uring");
                         });

}  // namespace
}  // namespace headrace::net
