// The io_uring backend: accept (multishot when the kernel has it), recv and
// sendmsg are submitted to the ring and complete asynchronously; the wake
// eventfd is read by a pending IORING_OP_READ. File pieces go out with
// sendfile(2) on the non-blocking socket from the loop thread (zero-copy, no
// pipe needed); on EAGAIN a POLL_ADD(POLLOUT) resumes them later. They are
// in the page cache (TransmitQueue checks; ranges that are not are handed
// to the loop, IoEvents::OnFileNotCached), so sendfile never waits for the disk.
// TLS connections: a POLL_ADD for the readiness their TlsTransport asks for
// (a NOP when it already holds input), then the transport's Read/Write on
// the loop thread; the handshake runs the same way.
// user_data: a Connection* with an operation tag in its low 3 bits, or one
// of the small constants below.
#include "net/io_backend.h"

#ifdef HEADRACE_HAVE_URING

#include <liburing.h>
#include <poll.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iterator>
#include <thread>

#include "common/logging.h"
#include "net/socket_util.h"

namespace headrace::net {
namespace {

constexpr uint64_t kIgnore = 0;  // cancel requests
constexpr uint64_t kWake = 4;
constexpr uint64_t kTagAccept = 5;  // (listener index << 3) | kTagAccept
constexpr uint64_t kTagRead = 1;
constexpr uint64_t kTagSend = 2;
constexpr uint64_t kTagPollOut = 3;
constexpr uint64_t kTagTlsRead = 4;  // a TLS read's poll / NOP (never equals kWake: c != 0)
constexpr uint64_t kTagMask = 7;
constexpr int64_t kMaxSendfile = int64_t{1} << 30;

uint64_t Tagged(Connection* c, uint64_t tag) { return reinterpret_cast<uint64_t>(c) | tag; }
uint64_t AcceptData(size_t listener) { return (uint64_t{listener} << 3) | kTagAccept; }
// Connections are heap objects (far above this) tagged 1..3; kWake is 4.
bool IsAccept(uint64_t data) {
  return (data & kTagMask) == kTagAccept && (data >> 3) < IoBackend::kMaxListeners;
}

class UringBackend final : public IoBackend {
 public:
  explicit UringBackend(unsigned entries) : entries_(entries) {
    std::fill(std::begin(listen_fds_), std::end(listen_fds_), -1);
  }
  ~UringBackend() override {
    if (ring_ok_) io_uring_queue_exit(&ring_);
  }
  const char* name() const override { return "io_uring"; }

  Status Init(IoEvents* events, int wake_fd) override {
    events_ = events;
    wake_fd_ = wake_fd;
    int rc = InitRing();
    if (rc < 0) return Status::FromErrno("io_uring_queue_init", -rc);
    ring_ok_ = true;
    ArmWake();
    return Status::OK();
  }

  void WatchListeners(const std::vector<int>& fds) override {
    for (size_t i = 0; i < fds.size() && i < kMaxListeners; ++i) {
      SetNonBlocking(fds[i], false);  // the ring waits for connections itself
      listen_fds_[i] = fds[i];
      // A cancelled accept still pending re-arms when its completion comes.
      if (!accept_armed_[i]) ArmAccept(i);
    }
  }

  void UnwatchListeners() override {
    for (size_t i = 0; i < kMaxListeners; ++i) {
      listen_fds_[i] = -1;
      if (!accept_armed_[i]) continue;
      io_uring_sqe* sqe = GetSqe();
      io_uring_prep_cancel64(sqe, AcceptData(i), 0);
      io_uring_sqe_set_data64(sqe, kIgnore);
    }
  }

  void Attach(Connection* c) override {}

  void ArmRead(Connection* c) override {
    if (c->tls) {
      ArmTlsRead(c);
      return;
    }
    std::span<uint8_t> space = c->framer.ReadSpace();
    io_uring_sqe* sqe = GetSqe();
    io_uring_prep_recv(sqe, c->fd, space.data(), space.size(), 0);
    io_uring_sqe_set_data64(sqe, Tagged(c, kTagRead));
    ++c->uring_ops;
  }

  int ArmWrite(Connection* c) override { return ContinueWrite(c); }

  void Detach(Connection* c) override {
    c->detached = true;
    if (c->uring_ops > 0) {
      // Completes pending recv/send/poll promptly; the cancel is a backstop.
      ::shutdown(c->fd, SHUT_RDWR);
      io_uring_sqe* sqe = GetSqe();
      io_uring_prep_cancel_fd(sqe, c->fd, IORING_ASYNC_CANCEL_ALL);
      io_uring_sqe_set_data64(sqe, kIgnore);
    }
    MaybeRelease(c);
  }

  void Poll(int timeout_ms) override {
    io_uring_cqe* cqe = nullptr;
    if (timeout_ms < 0) {
      events_->BeforeWait();
      io_uring_submit_and_wait(&ring_, 1);
      events_->AfterWait();
    } else if (timeout_ms == 0) {
      io_uring_submit_and_get_events(&ring_);  // also runs pending task work
    } else {
      __kernel_timespec ts{timeout_ms / 1000, (timeout_ms % 1000) * 1000000LL};
      events_->BeforeWait();
      io_uring_submit_and_wait_timeout(&ring_, &cqe, 1, &ts, nullptr);
      events_->AfterWait();
    }
    while (io_uring_peek_cqe(&ring_, &cqe) == 0) {
      uint64_t data = io_uring_cqe_get_data64(cqe);
      int res = cqe->res;
      unsigned flags = cqe->flags;
      io_uring_cqe_seen(&ring_, cqe);
      Dispatch(data, res, flags);
    }
  }

  void Shutdown() override {
    shutting_down_ = true;
    UnwatchListeners();
    if (wake_armed_) {
      io_uring_sqe* sqe = GetSqe();
      io_uring_prep_cancel64(sqe, kWake, 0);
      io_uring_sqe_set_data64(sqe, kIgnore);
    }
    // wake_value_ must not be written after this object is gone.
    for (int i = 0; i < 200 && (wake_armed_ || AnyAcceptArmed()); ++i) Poll(10);
  }

 private:
  // Completions of socket operations run as "task work" on this thread.
  // COOP_TASKRUN: the kernel does not interrupt the thread (IPI) for each
  // one; they run when the loop next enters the kernel to wait, i.e. in
  // Poll(). Kernels before 5.19 reject the flag: plain ring.
  // (DEFER_TASKRUN was measured too: no difference on the bench, and it
  // would forbid any submission from another thread.)
  int InitRing() {
    const unsigned modes[] = {IORING_SETUP_COOP_TASKRUN, 0};
    int rc = -EINVAL;
    for (unsigned flags : modes) {
      io_uring_params p{};
      p.flags = flags;
      rc = io_uring_queue_init_params(entries_, &ring_, &p);
      if (rc != -EINVAL) break;  // EINVAL: flag unknown to this kernel
    }
    return rc;
  }

  io_uring_sqe* GetSqe() {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    while (sqe == nullptr) {  // submission queue full: hand it to the kernel
      io_uring_submit(&ring_);
      sqe = io_uring_get_sqe(&ring_);
    }
    return sqe;
  }

  void ArmWake() {
    io_uring_sqe* sqe = GetSqe();
    io_uring_prep_read(sqe, wake_fd_, &wake_value_, sizeof(wake_value_), 0);
    io_uring_sqe_set_data64(sqe, kWake);
    wake_armed_ = true;
  }

  bool AnyAcceptArmed() const {
    return std::any_of(std::begin(accept_armed_), std::end(accept_armed_), [](bool b) { return b; });
  }

  void ArmAccept(size_t i) {
    io_uring_sqe* sqe = GetSqe();
    int fd = listen_fds_[i];
    if (multishot_) {
      io_uring_prep_multishot_accept(sqe, fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    } else {
      io_uring_prep_accept(sqe, fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    }
    io_uring_sqe_set_data64(sqe, AcceptData(i));
    accept_armed_[i] = true;
  }

  void Dispatch(uint64_t data, int res, unsigned flags) {
    if (data == kIgnore) return;
    if (data == kWake) {
      wake_armed_ = false;
      if (!shutting_down_) ArmWake();
      if (res != -ECANCELED) events_->OnWake();
      return;
    }
    if (IsAccept(data)) {
      OnAcceptCompletion(static_cast<size_t>(data >> 3), res, flags);
      return;
    }
    auto* c = reinterpret_cast<Connection*>(data & ~kTagMask);
    --c->uring_ops;
    if (c->detached) {
      MaybeRelease(c);
      return;
    }
    switch (data & kTagMask) {
      case kTagRead:
        events_->OnRead(c, res);
        break;
      case kTagSend:
        OnSendCompletion(c, res);
        break;
      case kTagPollOut:
        Resume(c);
        break;
      case kTagTlsRead:
        OnTlsReadReady(c, res);
        break;
    }
  }

  // Waits for what c's transport needs before it can read (nothing when it
  // holds input already: a NOP completes at once).
  void ArmTlsRead(Connection* c, bool after_eagain = false) {
    io_uring_sqe* sqe = GetSqe();
    if (!after_eagain && c->tls->HasBufferedInput()) {
      io_uring_prep_nop(sqe);
    } else {
      bool out = c->tls->read_wait() == TlsTransport::Wait::kWritable;
      io_uring_prep_poll_add(sqe, c->fd, out ? POLLOUT : POLLIN);
    }
    io_uring_sqe_set_data64(sqe, Tagged(c, kTagTlsRead));
    ++c->uring_ops;
  }

  void OnTlsReadReady(Connection* c, int res) {
    if (res < 0) {
      events_->OnRead(c, res);
      return;
    }
    int64_t n = c->tls->Read(c->framer.ReadSpace());
    if (n == -EAGAIN) {
      ArmTlsRead(c, /*after_eagain=*/true);  // always waits for the socket
      return;
    }
    events_->OnRead(c, n);
  }

  // The loop decides what to do with a socket accepted after an unwatch
  // (it closes it when stopping).
  void OnAcceptCompletion(size_t i, int res, unsigned flags) {
    if (!(flags & IORING_CQE_F_MORE)) accept_armed_[i] = false;
    if (res >= 0) {
      events_->OnAccept(res, i);
    } else if (res == -EINVAL && multishot_) {
      multishot_ = false;  // kernel without multishot accept: one at a time
    } else if (res == -EINVAL) {
      HR_LOG(kError) << "io_uring accept unsupported; no longer accepting";
      listen_fds_[i] = -1;
    } else {
      events_->OnAccept(res, i);
    }
    if (!accept_armed_[i] && listen_fds_[i] >= 0 && !shutting_down_) ArmAccept(i);
  }

  void OnSendCompletion(Connection* c, int res) {
    if (res == -EAGAIN || res == -EINTR) {
      Resume(c);
      return;
    }
    if (res <= 0) {
      events_->OnWriteDone(c, res < 0 ? res : -EPIPE);
      return;
    }
    c->out.Consume(res);
    Resume(c);
  }

  void Resume(Connection* c) {
    int r = ContinueWrite(c);
    if (r != 1) events_->OnWriteDone(c, r);
  }

  // Submits the next piece of c->out. Returns 1 (a completion will follow,
  // or the loop loads a file range not in the page cache and calls ArmWrite
  // again), 0 (c->out is empty) or -errno. Byte pieces go through the ring:
  // their sendmsg runs inside the io_uring_enter the loop makes anyway
  // (measured: writing them directly costs one more system call per reply
  // for no latency gain). File pieces (cached) are sent from the loop thread.
  int ContinueWrite(Connection* c) {
    if (c->tls) return ContinueTlsWrite(c);
    while (!c->out.empty()) {
      TransmitQueue::Piece p = c->out.Next();
      if (p.kind == TransmitQueue::Kind::kLoad) {
        events_->OnFileNotCached(c, std::move(p));
        return 1;
      }
      if (p.kind == TransmitQueue::Kind::kBytes) {
        io_uring_sqe* sqe = GetSqe();
        io_uring_prep_sendmsg(sqe, c->fd, c->out.msg(), MSG_NOSIGNAL);
        io_uring_sqe_set_data64(sqe, Tagged(c, kTagSend));
        ++c->uring_ops;
        return 1;
      }
      off_t off = p.file_offset;
      size_t len = static_cast<size_t>(std::min(p.file_length, kMaxSendfile));
      ssize_t n = ::sendfile(c->fd, p.file_fd, &off, len);
      if (n > 0) {
        c->out.Consume(n);
        continue;
      }
      if (n == 0) return -ENODATA;  // the file is shorter than the slice
      if (errno == EINTR) continue;
      if (errno != EAGAIN) return -errno;
      io_uring_sqe* sqe = GetSqe();
      io_uring_prep_poll_add(sqe, c->fd, POLLOUT);
      io_uring_sqe_set_data64(sqe, Tagged(c, kTagPollOut));
      ++c->uring_ops;
      return 1;
    }
    return 0;
  }

  // TLS: the transport writes until blocked, then a POLL_ADD(POLLOUT)
  // resumes it (kTagPollOut, as for sendfile).
  int ContinueTlsWrite(Connection* c) {
    TransmitQueue::Piece load;
    int r = c->tls->Write(c->out, &load);
    if (r == 2) {
      events_->OnFileNotCached(c, std::move(load));
      return 1;
    }
    if (r == 1) {
      io_uring_sqe* sqe = GetSqe();
      io_uring_prep_poll_add(sqe, c->fd, POLLOUT);
      io_uring_sqe_set_data64(sqe, Tagged(c, kTagPollOut));
      ++c->uring_ops;
    }
    return r;
  }

  void MaybeRelease(Connection* c) {
    if (!c->detached || c->released || c->uring_ops > 0) return;
    ::close(c->fd);
    c->released = true;
  }

  const unsigned entries_;
  io_uring ring_{};
  bool ring_ok_ = false;
  bool shutting_down_ = false;
  IoEvents* events_ = nullptr;
  int wake_fd_ = -1;
  uint64_t wake_value_ = 0;  // target of the pending eventfd read
  bool wake_armed_ = false;
  int listen_fds_[kMaxListeners];      // -1 = not watched
  bool accept_armed_[kMaxListeners] = {};  // an accept is pending for the slot
  bool multishot_ = true;
};

}  // namespace

std::unique_ptr<IoBackend> MakeUringBackend(unsigned queue_entries) {
  return std::make_unique<UringBackend>(queue_entries);
}

namespace {
bool ProbeIoUring() {
  io_uring ring{};
  if (io_uring_queue_init(8, &ring, 0) < 0) return false;
  bool ok = false;
  if (io_uring_probe* probe = io_uring_get_probe_ring(&ring)) {
    ok = io_uring_opcode_supported(probe, IORING_OP_ACCEPT) &&
         io_uring_opcode_supported(probe, IORING_OP_RECV) &&
         io_uring_opcode_supported(probe, IORING_OP_SENDMSG) &&
         io_uring_opcode_supported(probe, IORING_OP_POLL_ADD) &&
         io_uring_opcode_supported(probe, IORING_OP_READ) &&
         io_uring_opcode_supported(probe, IORING_OP_ASYNC_CANCEL);
    io_uring_free_probe(probe);
  }
  io_uring_queue_exit(&ring);
  return ok;
}
}  // namespace

bool IoUringAvailable() {
  // Probed once, on a helper thread: a ring's teardown notifies the thread
  // that created it, which would interrupt the caller's blocking calls.
  static const bool available = [] {
    bool ok = false;
    std::thread probe([&ok] { ok = ProbeIoUring(); });
    probe.join();
    return ok;
  }();
  return available;
}

}  // namespace headrace::net

#else  // !HEADRACE_HAVE_URING

namespace headrace::net {
std::unique_ptr<IoBackend> MakeUringBackend(unsigned) { return nullptr; }
bool IoUringAvailable() { return false; }
}  // namespace headrace::net

#endif
