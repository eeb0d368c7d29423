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

#include "broker/security/sasl/sasl_client.h"
#include "net/tls_client_stream.h"

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

void SetTimeouts(int fd, int ms) {
  timeval tv{ms / 1000, (ms % 1000) * 1000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

// Re-authenticate once this share of a SASL session's lifetime has passed.
constexpr int64_t kReauthenticatePercent = 85;

}  // namespace

LeaderConnection::LeaderConnection(std::string client_id,
                                   std::shared_ptr<const InterBrokerSecurity> security)
    : client_id_(std::move(client_id)), security_(std::move(security)) {}

LeaderConnection::~LeaderConnection() { Close(); }

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
      // The TLS handshake and SASL rounds wait at most the connect timeout
      // per read or write; requests afterwards the read timeout.
      SetTimeouts(fd, connect_timeout_ms);
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
  host_ = host + ":" + service;
  if (security_ != nullptr && security_->uses_tls()) {
    auto stream = net::TlsClientStream::Handshake(security_->tls, fd_, host);
    if (!stream.ok()) return Failed(stream.status().message());
    tls_ = std::move(stream).value();
  }
  if (security_ != nullptr && security_->uses_sasl()) HR_RETURN_IF_ERROR(Authenticate());
  SetTimeouts(fd_, read_timeout_ms);
  return Status::OK();
}

Status LeaderConnection::Authenticate() {
  reauthenticate_at_.reset();
  const InterBrokerSecurity& sec = *security_;
  auto fail = [&](const std::string& why) {
    return Failed("SASL authentication to " + host_ + " (" + sec.sasl_mechanism + " as " +
                  sec.sasl_username + ") failed: " + why);
  };
  protocol::SaslHandshakeRequest handshake;
  handshake.mechanism = sec.sasl_mechanism;
  auto hs = RoundTrip<protocol::SaslHandshakeResponse>(handshake, 1);
  if (!hs.ok()) return hs.status();
  if (hs->error_code != 0) {
    std::string enabled;
    for (const std::string& m : hs->mechanisms) enabled += (enabled.empty() ? "" : ", ") + m;
    return fail("the leader does not enable the mechanism (it offers: " + enabled + ")");
  }
  auto client = sasl::SaslClient::Create(sec.sasl_mechanism, sec.sasl_username, sec.sasl_password);
  if (!client.ok()) return fail(client.status().message());
  std::string token = (*client)->Start();
  for (int round = 0; round < 4; ++round) {
    protocol::SaslAuthenticateRequest auth;
    auth.auth_bytes = std::move(token);
    auto resp = RoundTrip<protocol::SaslAuthenticateResponse>(auth, 2);
    if (!resp.ok()) return resp.status();
    if (resp->error_code != 0) {
      std::string msg = resp->error_message.value_or("");
      return fail(msg.empty() ? "error code " + std::to_string(resp->error_code) : msg);
    }
    bool done = false;
    auto next = (*client)->Step(resp->auth_bytes, &done);
    if (!next.ok()) return fail(next.status().message());
    if (done) {
      if (resp->session_lifetime_ms > 0) {
        reauthenticate_at_ = std::chrono::steady_clock::now() +
                             std::chrono::milliseconds(resp->session_lifetime_ms *
                                                       kReauthenticatePercent / 100);
      }
      return Status::OK();
    }
    token = std::move(next).value();
  }
  return fail("the exchange did not end");
}

void LeaderConnection::Close() {
  {
    std::lock_guard<std::mutex> l(interrupt_mu_);
    interrupt_fd_ = -1;
  }
  tls_.reset();
  reauthenticate_at_.reset();
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
  if (tls_) {
    Status st = tls_->WriteAll(frame.data(), frame.size());
    return st.ok() ? st : Failed("send to the leader: " + st.message());
  }
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
    if (tls_) {
      bool timed_out = false, closed = false;
      Status st = tls_->ReadAll(p, n, &timed_out, &closed);
      if (st.ok()) return st;
      return Failed(timed_out ? "no response from the leader in time"
                    : closed  ? "the leader closed the connection"
                              : "recv from the leader: " + st.message());
    }
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
