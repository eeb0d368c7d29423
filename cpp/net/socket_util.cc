#include "net/socket_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace headrace::net {
namespace {

std::string FormatAddress(const sockaddr* sa) {
  char host[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  if (sa->sa_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    port = ntohs(in->sin_port);
    return std::string(host) + ":" + std::to_string(port);
  }
  if (sa->sa_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
    port = ntohs(in6->sin6_port);
    return "[" + std::string(host) + "]:" + std::to_string(port);
  }
  return "?";
}

}  // namespace

Result<ListenResult> ListenTcp(const std::string& host, uint16_t port, int backlog) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  std::string service = std::to_string(port);
  const char* node = host.empty() ? nullptr : host.c_str();
  int gai = getaddrinfo(node, service.c_str(), &hints, &res);
  std::string where = host + ":" + service;
  if (gai != 0) return Status::InvalidArgument("cannot resolve " + where + ": " + gai_strerror(gai));
  Status last = Status::IOError("no address for " + where);
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last = Status::FromErrno("socket for " + where, errno);
      continue;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
      last = Status::FromErrno("bind " + where, errno);
      ::close(fd);
      continue;
    }
    if (::listen(fd, backlog) != 0) {
      last = Status::FromErrno("listen " + where, errno);
      ::close(fd);
      continue;
    }
    sockaddr_storage bound{};
    socklen_t len = sizeof(bound);
    getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
    uint16_t bound_port = bound.ss_family == AF_INET6
                              ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                              : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    freeaddrinfo(res);
    return ListenResult{fd, bound_port};
  }
  freeaddrinfo(res);
  return last;
}

std::string PeerName(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "?";
  return FormatAddress(reinterpret_cast<sockaddr*>(&ss));
}

namespace {

void SetBufferSize(int fd, int force_opt, int opt, int bytes) {
  // The *FORCE variant (CAP_NET_ADMIN) may exceed net.core.{w,r}mem_max;
  // without the capability it fails with EPERM and the capped one is used.
  if (setsockopt(fd, SOL_SOCKET, force_opt, &bytes, sizeof(bytes)) == 0) return;
  setsockopt(fd, SOL_SOCKET, opt, &bytes, sizeof(bytes));
}

}  // namespace

void TuneAcceptedSocket(int fd, int send_buffer_bytes, int receive_buffer_bytes,
                        const std::string& local_congestion_control) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (send_buffer_bytes > 0) SetBufferSize(fd, SO_SNDBUFFORCE, SO_SNDBUF, send_buffer_bytes);
  if (receive_buffer_bytes > 0) {
    SetBufferSize(fd, SO_RCVBUFFORCE, SO_RCVBUF, receive_buffer_bytes);
  }
  SetLocalCongestionControl(fd, local_congestion_control);
}

namespace {

bool IsLoopback(const sockaddr_storage& a) {
  if (a.ss_family == AF_INET) {
    return (ntohl(reinterpret_cast<const sockaddr_in*>(&a)->sin_addr.s_addr) >> 24) == 127;
  }
  if (a.ss_family != AF_INET6) return false;
  const in6_addr& v6 = reinterpret_cast<const sockaddr_in6*>(&a)->sin6_addr;
  return IN6_IS_ADDR_LOOPBACK(&v6) || (IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127);
}

bool SameHost(const sockaddr_storage& a, const sockaddr_storage& b) {
  if (a.ss_family != b.ss_family) return false;
  if (a.ss_family == AF_INET) {
    return reinterpret_cast<const sockaddr_in*>(&a)->sin_addr.s_addr ==
           reinterpret_cast<const sockaddr_in*>(&b)->sin_addr.s_addr;
  }
  return a.ss_family == AF_INET6 &&
         IN6_ARE_ADDR_EQUAL(&reinterpret_cast<const sockaddr_in6*>(&a)->sin6_addr,
                            &reinterpret_cast<const sockaddr_in6*>(&b)->sin6_addr);
}

}  // namespace

bool AddressIsLocal(const sockaddr_storage& peer, const sockaddr_storage& self) {
  return IsLoopback(peer) || SameHost(peer, self);
}

bool PeerIsLocal(int fd) {
  sockaddr_storage peer{}, self{};
  socklen_t peer_len = sizeof(peer), self_len = sizeof(self);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) return false;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&self), &self_len) != 0) return false;
  return AddressIsLocal(peer, self);
}

void SetLocalCongestionControl(int fd, const std::string& algorithm) {
  if (algorithm.empty() || !PeerIsLocal(fd)) return;
  setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, algorithm.data(),
             static_cast<socklen_t>(algorithm.size()));
}

Status CheckCongestionControl(const std::string& algorithm) {
  if (algorithm.empty()) return Status::OK();
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);  // an IPv6-only host
  if (fd < 0) return Status::IOError("socket: " + std::string(strerror(errno)));
  const int rc = setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, algorithm.data(),
                            static_cast<socklen_t>(algorithm.size()));
  const int err = errno;
  close(fd);
  if (rc == 0) return Status::OK();
  return Status::InvalidArgument(
      "TCP congestion control '" + algorithm + "' cannot be set here (" + strerror(err) +
      "; see net.ipv4.tcp_available_congestion_control and, without CAP_NET_ADMIN, "
      "net.ipv4.tcp_allowed_congestion_control)");
}

void SetNonBlocking(int fd, bool on) {
  int flags = fcntl(fd, F_GETFL, 0);
  if (flags < 0) return;
  fcntl(fd, F_SETFL, on ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK));
}

}  // namespace headrace::net
