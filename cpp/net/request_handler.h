// The contract between the network server (cpp/net) and the broker
// (cpp/broker). The server frames requests (4-byte big-endian size prefix)
// and hands each frame to a RequestHandler; the handler answers through the
// Responder, possibly later and from another thread (long-poll fetch,
// acks=all waiting for a flush). The server writes answers on a connection
// in the order the requests arrived, whatever order they complete in.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "common/output_buffer.h"
#include "net/session.h"

namespace headrace::net {

// Runs closures on one I/O thread: the thread that owns a connection.
// Post may be called from any thread; the task runs later on the owning
// thread (never inside Post), tasks posted by one thread run in posting
// order. Once the loop has stopped, tasks are destroyed without running
// (on the posting thread or the loop's), so they must not rely on running.
class LoopExecutor {
 public:
  virtual ~LoopExecutor() = default;
  virtual void Post(std::function<void()> task) = 0;
};

struct ConnectionInfo {
  uint64_t id = 0;    // unique per server lifetime
  std::string peer;   // "host:port" of the client
  // The connection's own I/O thread: completions of delayed requests
  // (acks=all, long-poll fetch) run there. Null in tests that call a
  // handler directly (completions then run on the waking thread).
  std::shared_ptr<LoopExecutor> executor;
  // Listener, security protocol and principal (net/session.h). Never null
  // for connections the server accepted; tests calling a handler directly
  // may leave it null (read as an anonymous PLAINTEXT client).
  std::shared_ptr<Session> session;
  // The connection's quota gate (KIP-219): nothing more is read from it or
  // dispatched before this steady_clock time (ns since its epoch). Extended
  // through ExtendThrottle, from any thread. Null in tests that call a
  // handler directly.
  std::shared_ptr<std::atomic<int64_t>> throttled_until;
};

// Moves `until` (a connection's throttled_until) to at least `ms` from now;
// never earlier. Any thread.
void ExtendThrottle(std::atomic<int64_t>& until, int32_t ms);

// What to do with one request.
struct Reply {
  enum class Kind { kRespond, kNoResponse, kClose };
  Kind kind = Kind::kRespond;
  // For kRespond: the response WITHOUT the 4-byte size prefix (the server adds
  // it from body.size()). Starts with the response header (correlation id).
  OutputBuffer body;
  std::string close_reason;  // for kClose: logged by the server
  // kRespond only: close the connection once this response is written (a
  // failed SASL authentication answers, then closes, as Kafka). The server
  // logs `close_reason`.
  bool close_after = false;
  // Client quotas (KIP-219): once this reply is released (sent, or for
  // kNoResponse dropped), the server reads no further request from the
  // connection for this long. 0 = no throttle.
  int32_t throttle_ms = 0;

  static Reply Respond(OutputBuffer b) { Reply r; r.body = std::move(b); return r; }
  static Reply RespondThenClose(OutputBuffer b, std::string why) {
    Reply r;
    r.body = std::move(b);
    r.close_after = true;
    r.close_reason = std::move(why);
    return r;
  }
  static Reply NoResponse() { Reply r; r.kind = Kind::kNoResponse; return r; }
  static Reply Close(std::string why) {
    Reply r; r.kind = Kind::kClose; r.close_reason = std::move(why); return r;
  }
};

// Completes one request. Must be called exactly once; callable from any
// thread; cheap to copy. Calling it after the connection closed is harmless.
using Responder = std::function<void(Reply)>;

class RequestHandler {
 public:
  virtual ~RequestHandler() = default;
  // `frame` is one request without its size prefix, valid only during the
  // call; the handler may modify it in place (produce rewrites base offsets
  // before appending). Called on the connection's I/O thread; must not block for long
  // (disk appends to the page cache are fine; waiting is done by keeping
  // `respond` and calling it later).
  virtual void Handle(const ConnectionInfo& conn, std::span<uint8_t> frame,
                      Responder respond) = 0;
  // The connection closed (peer, error, limit or shutdown). Optional.
  virtual void OnClose(const ConnectionInfo& conn) {}
};

}  // namespace headrace::net
