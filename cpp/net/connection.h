// Connection: everything the server keeps for one client socket. Owned by
// its EventLoop and touched only on that loop's thread. Backend independent
// state (framing, in-order responses, output) plus a few fields that belong
// to whichever IoBackend runs the loop.
#pragma once

#include <atomic>
#include <cstddef>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <utility>

#include "net/framer.h"
#include "net/request_handler.h"
#include "net/response_queue.h"
#include "net/tls_transport.h"
#include "net/transmit_queue.h"

namespace headrace::net {

struct Connection {
  Connection(int socket_fd, ConnectionInfo conn_info, size_t read_buffer_bytes)
      : fd(socket_fd), info(std::move(conn_info)), framer(read_buffer_bytes) {}
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  const int fd;               // non-blocking; closed by the backend on Detach
  const ConnectionInfo info;  // handed to the RequestHandler
  Framer framer;              // bytes read, split into requests
  ResponseQueue responses;    // requests in flight, replies in request order
  TransmitQueue out;          // replies ready to be written
  // TLS listeners: the connection's TLS layer (the backends read and write
  // through it); null for plaintext.
  std::unique_ptr<TlsTransport> tls;

  // EventLoop state.
  bool read_armed = false;         // the backend owns framer.ReadSpace()
  bool write_armed = false;        // the backend is sending `out`
  bool close_after_flush = false;  // a Reply::kClose was released
  bool flush_queued = false;       // listed for the loop's next Flush()
  bool closed = false;             // closed; waits for `released` to be freed
  bool muted = false;              // not read until RequestMemory has room
  // Quota throttle: info.throttled_until, set by the connection's
  // responders when they answer (Reply::throttle_ms) and by handlers that
  // mute it before answering (any thread), so that a throttled answer given
  // inside Handle stops the dispatch of requests already framed; read on
  // the loop thread.
  bool throttle_listed = false;  // in the loop's `throttled_`
  std::chrono::steady_clock::time_point last_activity;  // last read or write
  // RequestMemory accounting: reserved for the frame being received, and
  // charged per request handed to the handler (front = oldest).
  int64_t reserved_bytes = 0;
  std::deque<int64_t> request_bytes;

  // IoBackend state. Invariant: after `detached` no callback names this
  // connection; once `released` the memory may be freed.
  bool detached = false;
  bool released = false;
  uint32_t epoll_mask = 0;  // epoll: events registered
  bool want_read = false;   // epoll: a read is armed
  bool want_write = false;  // epoll: waiting for EPOLLOUT
  int uring_ops = 0;        // io_uring: submissions not yet completed
};

}  // namespace headrace::net
