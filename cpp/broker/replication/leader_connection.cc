#include "broker/replication/leader_connection.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace headrace::broker::replication {
namespace {

// Largest response accepted (a fetch answer is bounded by
// replica.fetch.response.max.bytes plus one oversized batch).
constexpr uint32_t kMaxFrameBytes = 1u << 30;

std::string Errno(const char* what, int err) { return std::string(what) + ": " + std::strerror(err); }

// Connects `fd` (non-blocking) to `addr` within `timeout_ms`; 0 or errno.
int ConnectWithin(int fd, const sockaddr* addr, socklen_t len, int timeout_ms) {
  if (::connect(fd, addr, len) == 0) return 0;
  if (errno != EINPROGRESS) return errno;
  pollfd p{fd, POLLOUT, 0};
  int n = ::poll(&p, 1, timeout_ms);
  if (n == 0) return ETIMEDOUT;
  if (n < 0) return errno;
  int err = 0;
  socklen_t err_len = sizeof(err);
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &err_len) != 0) return errno;
  return err;
}

}  // namespace

Status LeaderConnection::Connect(const std::string& host, int32_t port, int connect_timeout_ms,
                                  int read_timeout_ms) {
  Close();
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return Status::IOError("resolve " + host + ": " + ::gai_strerror(rc));
  }
  int last_err = ECONNREFUSED;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      last_err = errno;
      continue;
    }
    {
      std::lock_guard<std::mutex> l(interrupt_mu_);
      if (interrupted_) {
        ::close(fd);
        ::freeaddrinfo(found);
        return Status::IOError("interrupted");
      }
      interrupt_fd_ = fd;
    }
    last_err = ConnectWithin(fd, a->ai_addr, a->ai_addrlen, connect_timeout_ms);
    if (last_err == 0) {
      int flags = ::fcntl(fd, F_GETFL);
      ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
      timeval tv{read_timeout_ms / 1000, (read_timeout_ms % 1000) * 1000};
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
      ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      fd_ = fd;
      break;
    }
    {
      std::lock_guard<std::mutex> l(interrupt_mu_);
      interrupt_fd_ = -1;
    }
    ::close(fd);
  }
  ::freeaddrinfo(found);
  if (fd_ < 0) return Status::IOError(Errno(("connect " + host + ":" + service).c_str(), last_err));
  return Status::OK();
}

void LeaderConnection::Close() {
  {
    std::lock_guard<std::mutex> l(interrupt_mu_);
    interrupt_fd_ = -1;
  }
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void LeaderConnection::Interrupt() {
  std::lock_guard<std::mutex> l(interrupt_mu_);
  interrupted_ = true;
  if (interrupt_fd_ >= 0) ::shutdown(interrupt_fd_, SHUT_RDWR);
}

Status LeaderConnection::Failed(const std::string& what) {
  Close();
  return Status::IOError(what);
}

Status LeaderConnection::SendFrame(const std::string& body) {
  if (fd_ < 0) return Status::IOError("not connected");
  uint32_t size = htonl(static_cast<uint32_t>(body.size()));
  std::string frame(reinterpret_cast<const char*>(&size), 4);
  frame += body;
  size_t done = 0;
  while (done < frame.size()) {
    ssize_t n = ::send(fd_, frame.data() + done, frame.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Failed(Errno("send to the leader", n < 0 ? errno : EPIPE));
    done += static_cast<size_t>(n);
  }
  return Status::OK();
}

Status LeaderConnection::ReadFrame() {
  auto read_all = [&](uint8_t* p, size_t n) -> Status {
    size_t done = 0;
    while (done < n) {
      ssize_t got = ::recv(fd_, p + done, n - done, 0);
      if (got < 0 && errno == EINTR) continue;
      if (got == 0) return Failed("the leader closed the connection");
      if (got < 0) {
        return Failed(errno == EAGAIN || errno == EWOULDBLOCK ? "no response from the leader in time"
                                                              : Errno("recv from the leader", errno));
      }
      done += static_cast<size_t>(got);
    }
    return Status::OK();
  };
  uint32_t size_be = 0;
  HR_RETURN_IF_ERROR(read_all(reinterpret_cast<uint8_t*>(&size_be), 4));
  const uint32_t size = ntohl(size_be);
  if (size > kMaxFrameBytes) return Failed("response of " + std::to_string(size) + " bytes");
  frame_.resize(size);
  return read_all(frame_.data(), size);
}

}  // namespace headrace::broker::replication
