#include "net/socket_util.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace headrace::net {
namespace {

sockaddr_storage V4(const char* ip) {
  sockaddr_storage ss{};
  auto* in = reinterpret_cast<sockaddr_in*>(&ss);
  in->sin_family = AF_INET;
  EXPECT_EQ(inet_pton(AF_INET, ip, &in->sin_addr), 1) << ip;
  return ss;
}

sockaddr_storage V6(const char* ip) {
  sockaddr_storage ss{};
  auto* in6 = reinterpret_cast<sockaddr_in6*>(&ss);
  in6->sin6_family = AF_INET6;
  EXPECT_EQ(inet_pton(AF_INET6, ip, &in6->sin6_addr), 1) << ip;
  return ss;
}

std::string CongestionOf(int fd) {
  char name[32] = {};
  socklen_t len = sizeof(name);
  if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &len) != 0) return "?";
  return std::string(name);
}

std::string SystemDefault() {
  std::ifstream in("/proc/sys/net/ipv4/tcp_congestion_control");
  std::string name;
  in >> name;
  return name;
}

// A connected pair over 127.0.0.1: {client fd, accepted fd}.
std::pair<int, int> LoopbackPair() {
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  EXPECT_EQ(listen(ls, 1), 0);
  socklen_t len = sizeof(a);
  getsockname(ls, reinterpret_cast<sockaddr*>(&a), &len);
  int c = socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_EQ(connect(c, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  int s = accept(ls, nullptr, nullptr);
  close(ls);
  return {c, s};
}

TEST(SocketUtilTest, LocalAddressesAreLoopbackOrTheSocketsOwn) {
  EXPECT_TRUE(AddressIsLocal(V4("127.0.0.1"), V4("127.0.0.1")));
  EXPECT_TRUE(AddressIsLocal(V4("127.3.2.1"), V4("10.0.0.5")));
  EXPECT_TRUE(AddressIsLocal(V6("::1"), V6("::1")));
  EXPECT_TRUE(AddressIsLocal(V6("::ffff:127.0.0.1"), V6("::ffff:127.0.0.1")));
  EXPECT_TRUE(AddressIsLocal(V4("10.0.0.5"), V4("10.0.0.5")));  // to its own address
  EXPECT_TRUE(AddressIsLocal(V6("fd00::5"), V6("fd00::5")));
  EXPECT_FALSE(AddressIsLocal(V4("10.0.0.6"), V4("10.0.0.5")));
  EXPECT_FALSE(AddressIsLocal(V4("128.0.0.1"), V4("10.0.0.5")));
  EXPECT_FALSE(AddressIsLocal(V6("fd00::6"), V6("fd00::5")));
  EXPECT_FALSE(AddressIsLocal(V6("::ffff:10.0.0.6"), V6("::ffff:10.0.0.5")));
  EXPECT_FALSE(AddressIsLocal(V4("10.0.0.5"), V6("::ffff:10.0.0.5")));  // families differ
}

TEST(SocketUtilTest, AConnectionFromThisHostGetsTheAlgorithm) {
  auto [c, s] = LoopbackPair();
  EXPECT_TRUE(PeerIsLocal(s));
  SetLocalCongestionControl(s, "reno");
  EXPECT_EQ(CongestionOf(s), "reno");
  EXPECT_EQ(CongestionOf(c), SystemDefault());  // only the socket it was asked for
  close(c);
  close(s);
}

TEST(SocketUtilTest, EmptyKeepsTheSystemsDefault) {
  auto [c, s] = LoopbackPair();
  SetLocalCongestionControl(s, "");
  EXPECT_EQ(CongestionOf(s), SystemDefault());
  close(c);
  close(s);
}

TEST(SocketUtilTest, AnUnconnectedSocketIsNotLocal) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_FALSE(PeerIsLocal(fd));
  close(fd);
}

TEST(SocketUtilTest, CheckNamesWhatTheKernelRefuses) {
  EXPECT_TRUE(CheckCongestionControl("").ok());
  EXPECT_TRUE(CheckCongestionControl("reno").ok());  // always allowed
  Status st = CheckCongestionControl("no-such-algorithm");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
  EXPECT_NE(st.message().find("no-such-algorithm"), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find("tcp_allowed_congestion_control"), std::string::npos);
}

}  // namespace
}  // namespace headrace::net
