// Test helpers shared by the Server tests (server_test.cc,
// server_limits_test.cc): a scriptable RequestHandler, a blocking client and
// a fixture run for both backends. The test handler reads a command from
// the first byte of each request:
//   E<text>            echo the whole request back at once
//   D<4-digit ms><text> answer <text> after a delay, from another thread
//   N                  no response;  C<why>  close the connection
//   F                  answer with file slices of the test's temp file
//   H                  hold the responder; the test answers later
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "net/server.h"

namespace headrace::net::test {

using namespace std::chrono_literals;

inline std::string Prefix(uint32_t n) {
  return {static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8),
          static_cast<char>(n)};
}
inline std::string Frame(const std::string& body) {
  return Prefix(static_cast<uint32_t>(body.size())) + body;
}

inline OutputBuffer Bytes(const std::string& s) {
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
      case 'T': {  // "T" + 4-digit ms + text: answer at once, throttled for ms
        Reply r = Reply::Respond(Bytes(req.substr(5)));
        r.throttle_ms = std::stoi(req.substr(1, 4));
        respond(std::move(r));
        break;
      }
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

// Test names: .../epoll, .../io_uring.
inline std::string BackendParamName(const ::testing::TestParamInfo<Backend>& info) {
  return info.param == Backend::kEpoll ? "epoll" : "io_uring";
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
    o.listeners = {{"127.0.0.1", 0, ""}};
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

}  // namespace headrace::net::test
