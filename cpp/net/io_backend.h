// IoBackend: the small interface between an EventLoop (framing, ordering,
// limits: shared logic) and the system calls that move bytes. Two
// implementations: io_uring (completion based) and epoll (readiness based,
// emulating completions). One backend instance per I/O thread; all calls on
// that thread.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "headrace/status.h"
#include "net/connection.h"

namespace headrace::net {

// What a backend reports to its loop (always from inside Poll()).
class IoEvents {
 public:
  virtual ~IoEvents() = default;
  // A new client socket (non-blocking, close-on-exec), or -errno, accepted
  // on ServerOptions::listeners[listener].
  virtual void OnAccept(int fd, size_t listener) = 0;
  // An armed read finished: n > 0 bytes were written at the start of
  // c->framer.ReadSpace(); 0 = the peer closed; < 0 = -errno.
  virtual void OnRead(Connection* c, int64_t n) = 0;
  // An armed write finished: err == 0 means c->out is empty; < 0 = -errno.
  virtual void OnWriteDone(Connection* c, int err) = 0;
  // The wake eventfd fired (its counter has been consumed).
  virtual void OnWake() = 0;
  // An armed write reached a file range that is not in the page cache
  // (load.kind == kLoad). The write stays armed and the backend sends
  // nothing more for c; the loop brings the range into the page cache off
  // this thread, calls c->out.MarkLoaded() and then ArmWrite(c) again.
  virtual void OnFileNotCached(Connection* c, TransmitQueue::Piece load) = 0;
  // Around each wait in the kernel for events that may block (not a 0 ms
  // poll): the loop's turns lie between AfterWait and the next BeforeWait
  // (StallClock measures them).
  virtual void BeforeWait() {}
  virtual void AfterWait() {}
};

class IoBackend {
 public:
  static constexpr size_t kMaxListeners = 16;
  virtual ~IoBackend() = default;
  virtual const char* name() const = 0;
  // `wake_fd`: an eventfd the loop's Mailbox writes to; the backend watches it.
  virtual Status Init(IoEvents* events, int wake_fd) = 0;
  // Accepts on these listening sockets (not owned; at most kMaxListeners)
  // until UnwatchListeners(). May be called again after UnwatchListeners()
  // with the same sockets (the acceptor pauses when descriptors run out).
  virtual void WatchListeners(const std::vector<int>& fds) = 0;
  virtual void UnwatchListeners() = 0;
  virtual void Attach(Connection* c) = 0;
  // Reads once into c->framer.ReadSpace(); reports OnRead.
  // REQUIRES: no read armed for c.
  virtual void ArmRead(Connection* c) = 0;
  // Sends c->out until it is empty. Returns 1 when OnWriteDone will follow,
  // 0 when c->out is already empty, -errno on error (no callback for 0/<0).
  // REQUIRES: no write armed for c.
  virtual int ArmWrite(Connection* c) = 0;
  // Stops all callbacks for c and closes its socket; sets c->released once
  // the kernel no longer uses c's buffers (now or in a later Poll()).
  virtual void Detach(Connection* c) = 0;
  // Waits up to timeout_ms (-1: no limit, 0: no wait) and dispatches events.
  virtual void Poll(int timeout_ms) = 0;
  // Cancels the listener and wake watches before destruction (may Poll).
  virtual void Shutdown() = 0;
};

std::unique_ptr<IoBackend> MakeEpollBackend();
// nullptr when headrace was built without liburing.
std::unique_ptr<IoBackend> MakeUringBackend(unsigned queue_entries);
// True when an io_uring instance with the operations we use can be created
// here (it may be disabled by sysctl or seccomp, e.g. in containers).
bool IoUringAvailable();

}  // namespace headrace::net
