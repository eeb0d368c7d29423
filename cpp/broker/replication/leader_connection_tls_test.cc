// LeaderConnection over TLS against a peer that accepts the TCP connection
// but never answers the handshake: the connect timeout bounds the
// handshake, and Interrupt() from another thread ends it at once.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "broker/replication/leader_connection.h"

namespace headrace::broker::replication {
namespace {

// A listening socket on 127.0.0.1 whose backlog completes connections that
// nobody ever reads from.
class SilentPeer {
 public:
  SilentPeer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    EXPECT_EQ(::listen(fd_, 4), 0);
    EXPECT_EQ(::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len), 0);
    port_ = ntohs(a.sin_port);
  }
  ~SilentPeer() { ::close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

std::shared_ptr<const InterBrokerSecurity> TlsOnly() {
  auto s = std::make_shared<InterBrokerSecurity>();
  s->protocol = net::SecurityProtocol::kSsl;
  auto ctx = net::TlsContext::CreateClient(net::TlsSettings{});
  EXPECT_TRUE(ctx.ok()) << ctx.status().message();
  s->tls = *ctx;
  return s;
}

using Clock = std::chrono::steady_clock;

TEST(LeaderConnectionTlsTest, TheConnectTimeoutBoundsTheHandshake) {
  SilentPeer peer;
  LeaderConnection conn("test", TlsOnly());
  const auto start = Clock::now();
  Status st = conn.Connect("127.0.0.1", peer.port(), 300, 5000);
  const auto took = Clock::now() - start;
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("TLS handshake with 127.0.0.1 failed: handshake timed out"),
            std::string::npos)
      << st.message();
  EXPECT_FALSE(conn.connected());
  EXPECT_LT(took, std::chrono::seconds(3));
}

TEST(LeaderConnectionTlsTest, InterruptEndsAHandshakeInProgress) {
  SilentPeer peer;
  LeaderConnection conn("test", TlsOnly());
  Status st;
  const auto start = Clock::now();
  std::thread t([&] { st = conn.Connect("127.0.0.1", peer.port(), 30000, 30000); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  conn.Interrupt();
  t.join();
  EXPECT_FALSE(st.ok());
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5)) << st.message();
  EXPECT_FALSE(conn.Connect("127.0.0.1", peer.port(), 300, 300).ok());  // stays interrupted
}

}  // namespace
}  // namespace headrace::broker::replication
