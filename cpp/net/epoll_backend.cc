// The epoll backend: level-triggered readiness on non-blocking sockets,
// turned into the completion-style IoBackend calls. Reads happen when a read
// is armed and the socket is readable; writes are tried at once (sendmsg for
// byte pieces, sendfile(2) for file pieces) and resume on EPOLLOUT after
// EAGAIN; a file range not in the page cache is handed to the loop
// (IoEvents::OnFileNotCached) instead of being sent. Interest bits are
// updated lazily to save epoll_ctl calls. TLS connections read and write
// through their TlsTransport, waiting for whichever readiness it asks for;
// one whose transport still holds input is read in the next Poll() without
// waiting for the socket.
#include <sys/epoll.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <iterator>

#include "net/io_backend.h"
#include "net/socket_util.h"

namespace headrace::net {
namespace {

// sendfile moves at most this much per call (Linux caps a call near 2 GiB).
constexpr int64_t kMaxSendfile = int64_t{1} << 30;

class EpollBackend final : public IoBackend {
 public:
  EpollBackend() { std::fill(std::begin(listen_fds_), std::end(listen_fds_), -1); }
  ~EpollBackend() override {
    if (ep_ >= 0) ::close(ep_);
  }
  const char* name() const override { return "epoll"; }

  Status Init(IoEvents* events, int wake_fd) override {
    events_ = events;
    wake_fd_ = wake_fd;
    ep_ = epoll_create1(EPOLL_CLOEXEC);
    if (ep_ < 0) return Status::FromErrno("epoll_create1", errno);
    if (Ctl(EPOLL_CTL_ADD, wake_fd, EPOLLIN, &wake_tag_) != 0) {
      return Status::FromErrno("epoll_ctl(wake)", errno);
    }
    return Status::OK();
  }

  void WatchListeners(const std::vector<int>& fds) override {
    UnwatchListeners();
    for (size_t i = 0; i < fds.size() && i < kMaxListeners; ++i) {
      SetNonBlocking(fds[i], true);
      listen_fds_[i] = fds[i];
      Ctl(EPOLL_CTL_ADD, fds[i], EPOLLIN, &listen_fds_[i]);
    }
  }

  void UnwatchListeners() override {
    for (int& fd : listen_fds_) {
      if (fd < 0) continue;
      epoll_ctl(ep_, EPOLL_CTL_DEL, fd, nullptr);
      fd = -1;
    }
  }

  void Attach(Connection* c) override {
    c->epoll_mask = EPOLLIN;
    Ctl(EPOLL_CTL_ADD, c->fd, c->epoll_mask, c);
  }

  void ArmRead(Connection* c) override {
    c->want_read = true;
    if (c->tls && c->tls->HasBufferedInput()) {
      ready_.push_back(c);  // read in the next Poll()
      return;
    }
    if (c->tls) {
      SetTlsMask(c);
      return;
    }
    SetMask(c, c->epoll_mask | EPOLLIN);
  }

  int ArmWrite(Connection* c) override { return ContinueWrite(c); }

  void Detach(Connection* c) override {
    c->detached = true;
    epoll_ctl(ep_, EPOLL_CTL_DEL, c->fd, nullptr);
    std::erase(ready_, c);
    ::close(c->fd);
    // Events for c later in the current batch see `detached`; the loop frees
    // released connections only between Poll() calls.
    c->released = true;
  }

  void Poll(int timeout_ms) override {
    if (!ready_.empty()) timeout_ms = 0;
    if (timeout_ms != 0) events_->BeforeWait();
    int n = epoll_wait(ep_, events_buf_, kMaxEvents, timeout_ms);
    if (timeout_ms != 0) events_->AfterWait();
    ReadBuffered();
    for (int i = 0; i < n; ++i) {
      void* tag = events_buf_[i].data.ptr;
      uint32_t ev = events_buf_[i].events;
      if (tag == &wake_tag_) {
        uint64_t v;
        [[maybe_unused]] ssize_t r = ::read(wake_fd_, &v, sizeof(v));
        events_->OnWake();
      } else if (IsListenerTag(tag)) {
        AcceptAll(static_cast<int*>(tag));
      } else {
        OnSocketEvent(static_cast<Connection*>(tag), ev);
      }
    }
  }

  void Shutdown() override { UnwatchListeners(); }

 private:
  static constexpr int kMaxEvents = 256;

  int Ctl(int op, int fd, uint32_t mask, void* tag) {
    epoll_event e{};
    e.events = mask;
    e.data.ptr = tag;
    return epoll_ctl(ep_, op, fd, &e);
  }

  void SetMask(Connection* c, uint32_t mask) {
    if (mask == c->epoll_mask) return;
    c->epoll_mask = mask;
    Ctl(EPOLL_CTL_MOD, c->fd, mask, c);
  }

  bool IsListenerTag(void* tag) const {
    auto p = reinterpret_cast<uintptr_t>(tag);
    return p >= reinterpret_cast<uintptr_t>(&listen_fds_[0]) &&
           p < reinterpret_cast<uintptr_t>(&listen_fds_[kMaxListeners]);
  }

  // `listener` points into listen_fds_; OnAccept may unwatch it (-1).
  void AcceptAll(const int* listener) {
    for (int i = 0; i < 64 && *listener >= 0; ++i) {
      int fd = accept4(*listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd >= 0) {
        events_->OnAccept(fd, static_cast<size_t>(listener - listen_fds_));
        continue;
      }
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN) events_->OnAccept(-errno, static_cast<size_t>(listener - listen_fds_));
      return;
    }
  }

  // TLS connections whose transport holds input: read without waiting.
  void ReadBuffered() {
    if (ready_.empty()) return;
    ready_scratch_.swap(ready_);
    for (Connection* c : ready_scratch_) {
      if (!c->detached && c->want_read) DoRead(c);
    }
    ready_scratch_.clear();
  }

  // The interest set of a TLS connection: what its transport waits for.
  void SetTlsMask(Connection* c) {
    uint32_t mask = 0;
    if (c->want_read) {
      mask |= c->tls->read_wait() == TlsTransport::Wait::kWritable ? EPOLLOUT : EPOLLIN;
    }
    if (c->want_write) mask |= EPOLLOUT;
    SetMask(c, mask);
  }

  void OnSocketEvent(Connection* c, uint32_t ev) {
    if (c->detached) return;
    bool hangup = (ev & (EPOLLHUP | EPOLLERR)) != 0;
    if (c->tls) {
      OnTlsEvent(c, ev, hangup);
      return;
    }
    if ((ev & EPOLLIN) || hangup) {
      if (c->want_read) {
        DoRead(c);
        if (c->detached) return;
      } else if (ev & EPOLLIN) {
        SetMask(c, c->epoll_mask & ~EPOLLIN);  // reading paused: stop the wake-ups
      }
    }
    if ((ev & EPOLLOUT) || hangup) {
      if (c->want_write) {
        int r = ContinueWrite(c);
        if (r != 1) events_->OnWriteDone(c, r);
        if (c->detached) return;
      }
    }
    // A hang-up nobody waits for would fire forever (level-triggered).
    if (hangup && !c->want_read && !c->want_write && !c->detached) {
      events_->OnRead(c, -ECONNRESET);
    }
  }

  void OnTlsEvent(Connection* c, uint32_t ev, bool hangup) {
    if (c->want_read) {
      bool ready = c->tls->read_wait() == TlsTransport::Wait::kWritable ? (ev & EPOLLOUT) != 0
                                                                         : (ev & EPOLLIN) != 0;
      if (ready || hangup) DoRead(c);
      if (c->detached) return;
    }
    if (c->want_write && ((ev & EPOLLOUT) || hangup)) {
      int r = ContinueWrite(c);
      if (r != 1) events_->OnWriteDone(c, r);
      if (c->detached) return;
    }
    if (hangup && !c->want_read && !c->want_write) {
      events_->OnRead(c, -ECONNRESET);
      return;
    }
    SetTlsMask(c);
  }

  void DoRead(Connection* c) {
    std::span<uint8_t> space = c->framer.ReadSpace();
    if (c->tls) {
      int64_t n = c->tls->Read(space);
      if (n == -EAGAIN) {
        SetTlsMask(c);  // stays armed, waiting for what the transport needs
        return;
      }
      c->want_read = false;
      events_->OnRead(c, n);
      if (!c->detached && !c->want_read) SetTlsMask(c);
      return;
    }
    ssize_t n = ::recv(c->fd, space.data(), space.size(), 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;  // stays armed
    c->want_read = false;
    events_->OnRead(c, n >= 0 ? n : -errno);
  }

  // Sends until c->out is empty (0), the socket is full (1: EPOLLOUT armed),
  // a file range is not in the page cache (1: the loop loads it and calls
  // ArmWrite again) or an error (-errno).
  int ContinueWrite(Connection* c) {
    if (c->tls) return ContinueTlsWrite(c);
    while (!c->out.empty()) {
      TransmitQueue::Piece p = c->out.Next();
      if (p.kind == TransmitQueue::Kind::kLoad) {
        StopWaitingForWritable(c);
        events_->OnFileNotCached(c, std::move(p));
        return 1;
      }
      ssize_t n;
      if (p.kind == TransmitQueue::Kind::kFile) {
        off_t off = p.file_offset;
        size_t len = static_cast<size_t>(p.file_length < kMaxSendfile ? p.file_length : kMaxSendfile);
        n = ::sendfile(c->fd, p.file_fd, &off, len);
        if (n == 0) return -ENODATA;  // the file is shorter than the slice
      } else {
        n = ::sendmsg(c->fd, c->out.msg(), MSG_NOSIGNAL | MSG_DONTWAIT);
      }
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno != EAGAIN) return -errno;
        c->want_write = true;
        SetMask(c, c->epoll_mask | EPOLLOUT);
        return 1;
      }
      c->out.Consume(n);
    }
    StopWaitingForWritable(c);
    return 0;
  }

  int ContinueTlsWrite(Connection* c) {
    TransmitQueue::Piece load;
    int r = c->tls->Write(c->out, &load);
    c->want_write = r == 1;
    SetTlsMask(c);
    if (r == 2) {
      events_->OnFileNotCached(c, std::move(load));
      return 1;
    }
    return r;
  }

  void StopWaitingForWritable(Connection* c) {
    if (!c->want_write) return;
    c->want_write = false;
    SetMask(c, c->epoll_mask & ~EPOLLOUT);  // writable sockets would fire forever
  }

  IoEvents* events_ = nullptr;
  int ep_ = -1;
  int wake_fd_ = -1;
  char wake_tag_ = 0;  // address used as the eventfd's epoll tag
  // Watched listening sockets (-1 = free slot); each slot's address is its
  // epoll tag.
  int listen_fds_[kMaxListeners];
  epoll_event events_buf_[kMaxEvents];
  // TLS connections with a read armed and input held by their transport.
  std::vector<Connection*> ready_;
  std::vector<Connection*> ready_scratch_;
};

}  // namespace

std::unique_ptr<IoBackend> MakeEpollBackend() { return std::make_unique<EpollBackend>(); }

}  // namespace headrace::net
