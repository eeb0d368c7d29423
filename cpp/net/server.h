// Server: the TCP front door of the broker. Listens on host:port, runs N I/O
// threads (each its own event loop on io_uring or epoll), frames requests
// (4-byte big-endian size prefix), hands each to a RequestHandler and writes
// the replies back in request order per connection. See docs/network.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "headrace/status.h"
#include "net/connection_limits.h"
#include "net/request_handler.h"
#include "net/stall_clock.h"
#include "net/tls_context.h"

namespace headrace::net {

enum class Backend { kAuto, kIoUring, kEpoll };

// "auto" | "io_uring" | "epoll".
const char* BackendName(Backend b);
Result<Backend> ParseBackend(const std::string& name);
// True when io_uring can be used here (kernel support, not disabled by
// sysctl/seccomp, headrace built with liburing). Backend::kAuto uses it then.
bool IoUringAvailable();

struct ListenAddress {
  std::string host = "0.0.0.0";  // "" = every interface
  uint16_t port = 9092;          // 0 = an ephemeral port; see Server::ports()
  std::string name;              // for error messages, e.g. "PLAINTEXT://h:p"
  // What connections accepted here start their Session with.
  std::string listener_name = "PLAINTEXT";
  SecurityProtocol protocol = SecurityProtocol::kPlaintext;
  // SSL / SASL_SSL: the listener's TLS context (connections run TLS through
  // a TlsTransport); null = plaintext bytes on the socket.
  std::shared_ptr<const TlsContext> tls = nullptr;
};

struct ServerOptions {
  // Every address accepted on (1 to IoBackend::kMaxListeners).
  std::vector<ListenAddress> listeners = {ListenAddress{}};
  int io_threads = 0;    // 0 = number of cores
  // socket.request.max.bytes: a larger (or <= 0) size prefix closes the
  // connection.
  int64_t max_request_bytes = 100 * 1024 * 1024;
  int max_connections = 0;  // 0 = no limit; over it new sockets are closed
  // max.connections.per.ip: < 0 = no limit; over it new sockets are closed.
  int max_connections_per_ip = -1;
  // connections.max.idle.ms: a connection with nothing in flight, nothing
  // to write and no traffic for this long is closed (checked once a
  // second). < 0 = never.
  std::chrono::milliseconds idle_timeout{-1};
  // queued.max.request.bytes: bytes of requests being received (once their
  // size is known) or not yet answered, across all connections; over it
  // connections are not read until bytes are released (one request larger
  // than this still passes when nothing else is held). <= 0 = no limit.
  int64_t max_queued_request_bytes = 0;
  // Repeated errors (malformed requests, refused connections, failed
  // accepts) are logged once, then summarised in one line per interval.
  std::chrono::milliseconds error_summary_interval{10000};
  // Requests handed to the handler and not yet answered, per connection;
  // at the limit the connection is not read further.
  int max_in_flight_per_connection = 100;
  // Reading from a connection pauses while more than this many reply bytes
  // are queued for it (it resumes once they are written).
  int64_t max_unsent_bytes_per_connection = 4 * 1024 * 1024;
  size_t read_buffer_bytes = 64 * 1024;  // grows for one larger request
  Backend backend = Backend::kAuto;
  // How long Stop() lets in-flight requests finish.
  std::chrono::milliseconds shutdown_grace{5000};
  int listen_backlog = 1024;
  // socket.send.buffer.bytes; <= 0 = OS default (autotuned up to
  // net.ipv4.tcp_wmem's max, 4 MiB here). Set: SO_SNDBUFFORCE when the
  // process may (root / CAP_NET_ADMIN), else SO_SNDBUF capped at
  // net.core.wmem_max; the kernel doubles the value. 16 MiB lets a 16 MiB
  // fetch response leave in one sendfile (~40% less broker CPU per GB
  // fetched, docs/performance.md) at the price of that much kernel memory
  // per slow reader, hence not the default.
  int send_buffer_bytes = -1;
  int receive_buffer_bytes = -1;  // socket.receive.buffer.bytes; -1 = OS default
  // headrace.socket.local.congestion.control: TCP congestion control of
  // accepted connections whose peer is on this host (net::
  // SetLocalCongestionControl); empty = the system's default. Start fails
  // with InvalidArgument if the kernel does not let this process set it.
  std::string local_congestion_control;
  unsigned io_uring_entries = 1024;  // submission queue size per thread
};

class EventLoop;
struct LoopShared;
class PageCacheLoader;

class Server {
 public:
  // `handler` must outlive the Server (it is called until Stop() returns).
  Server(ServerOptions options, RequestHandler* handler);
  ~Server();  // Stop()s
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds, listens and starts the I/O threads. Errors: an address in use or
  // not resolvable (IOError / InvalidArgument, naming the listener), io_uring
  // requested but not available (Unsupported), already started or no / too
  // many listeners (InvalidArgument).
  Status Start();
  // Stops accepting and reading, lets in-flight requests complete for up to
  // shutdown_grace, writes their replies, closes every connection (OnClose is
  // called) and joins the threads. Idempotent. Responders called afterwards
  // do nothing. REQUIRES: not called from an I/O thread (e.g. in Handle).
  void Stop();

  // The bound port of the first listener (valid after Start()).
  uint16_t port() const { return ports_.empty() ? 0 : ports_.front(); }
  // The bound port of each listener, in ServerOptions::listeners order.
  const std::vector<uint16_t>& ports() const { return ports_; }
  // The backend actually running (kIoUring or kEpoll) after Start().
  Backend backend() const { return running_backend_; }
  int active_connections() const;
  // Connections admitted, closed and refused since Start() (all zero before).
  ConnectionLimits::Totals connection_totals() const;
  // Turns of the network threads that blocked (net/stall_clock.h) since Start().
  StallCounters::Totals stall_totals() const;

 private:
  // Creates and starts one loop per I/O thread. On error some may run:
  // the caller StopLoops().
  Status StartLoops(Backend b);
  void StopLoops();
  Status Listen();
  void CloseListeners();
  std::string Describe() const;  // "host:port, host:port" as bound

  const ServerOptions options_;
  RequestHandler* const handler_;
  std::mutex mu_;  // serialises Start/Stop
  bool started_ = false;
  std::vector<int> listen_fds_;
  std::vector<uint16_t> ports_;
  Backend running_backend_ = Backend::kAuto;
  std::unique_ptr<LoopShared> shared_;
  std::vector<std::unique_ptr<EventLoop>> loops_;
  std::unique_ptr<PageCacheLoader> page_cache_loader_;  // shared by loops_
};

}  // namespace headrace::net
