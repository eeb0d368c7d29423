// EventLoop: one I/O thread. Owns its connections, an IoBackend and a
// Mailbox. Holds all backend-independent logic: framing, dispatch to the
// RequestHandler, in-order release of replies, backpressure, limits and the
// graceful stop. Loop 0 also accepts on every listener and spreads new
// sockets round-robin over all loops (through their mailboxes). Once a
// second (the tick) each loop closes idle connections, retries muted ones
// and writes the summaries of repeated errors.
#pragma once

#include <atomic>
#include <chrono>
#include <future>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/logging.h"
#include "net/connection_limits.h"
#include "net/event_summary.h"
#include "net/io_backend.h"
#include "net/mailbox.h"
#include "net/page_cache_loader.h"
#include "net/request_handler.h"
#include "net/request_memory.h"
#include "net/stall_clock.h"
#include "net/tls_context.h"

namespace headrace::net {

class EventLoop;

// Settings and counters shared by all loops of one Server; outlives them.
struct LoopShared {
  LoopShared(int max_connections, int max_per_ip, int64_t max_queued_request_bytes,
             std::chrono::milliseconds summary_interval)
      : limits(max_connections, max_per_ip),
        memory(max_queued_request_bytes),
        bad_requests("malformed or refused requests", summary_interval),
        refused_connections("connections refused over a connection limit", summary_interval),
        accept_errors("failed accepts", summary_interval),
        tls_failures("failed TLS connections", summary_interval),
        stall_lines("network-thread stalls (off CPU >= 10 ms in a blocking call)",
                    summary_interval) {}

  RequestHandler* handler = nullptr;
  int64_t max_request_bytes = 0;
  size_t max_in_flight = 0;
  int64_t max_unsent_bytes = 0;
  size_t read_buffer_bytes = 0;
  int send_buffer_bytes = -1;
  int receive_buffer_bytes = -1;
  std::string local_congestion_control;
  std::chrono::milliseconds idle_timeout{-1};  // < 0: never
  std::chrono::milliseconds shutdown_grace{5000};
  ConnectionLimits limits;  // admitted by the acceptor, released on close
  RequestMemory memory;
  std::atomic<int> muted_connections{0};  // waiting for `memory`, all loops
  std::atomic<uint64_t> next_connection_id{1};
  EventSummary bad_requests;
  EventSummary refused_connections;
  EventSummary accept_errors;
  // TLS handshakes and records that failed (plaintext on a TLS port,
  // untrusted certificates, malformed records): one line, then summaries.
  EventSummary tls_failures;
  // Turns of the loops that blocked (StallClock): counted, the first logged
  // at warn level, the ones after it summarised.
  StallCounters stalls;
  EventSummary stall_lines;
  std::vector<EventLoop*> loops;  // fixed before any loop starts
  PageCacheLoader* page_cache_loader = nullptr;  // outlives the loops' threads
  // Per listener (ServerOptions::listeners order): the Session a connection
  // accepted on it starts with (name and security protocol).
  std::vector<Session> listener_sessions;
  // Per listener: its TLS context (null = plaintext).
  std::vector<std::shared_ptr<const TlsContext>> listener_tls;
};

class EventLoop final : private IoEvents {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kTick{1000};
  // After EMFILE/ENFILE the acceptor stops for this long, doubling up to
  // kMaxAcceptBackoff while accepts keep failing.
  static constexpr std::chrono::milliseconds kMinAcceptBackoff{100};
  static constexpr std::chrono::milliseconds kMaxAcceptBackoff{1000};

  EventLoop(LoopShared* shared, std::unique_ptr<IoBackend> backend);
  ~EventLoop() override;

  // Creates the wake eventfd and the mailbox.
  Status Init();
  // This loop accepts on these listening sockets (not owned).
  // REQUIRES: before Start().
  void SetListeners(std::vector<int> fds) { listen_fds_ = std::move(fds); }
  // Starts the thread, which initialises the backend (an io_uring instance
  // belongs to the thread that creates it: creating it on the caller's
  // thread would let its teardown interrupt the caller's system calls with
  // EINTR). Returns the backend's Init status; on error the thread is gone.
  Status Start();
  // Any thread: stop accepting and reading, finish in-flight requests within
  // the grace period, write their replies, close everything, end the thread.
  void RequestStop();
  void Join();
  Mailbox& mailbox() { return *mailbox_; }
  const char* backend_name() const { return backend_->name(); }

 private:
  void Run(std::promise<Status>* started);
  void NameThread();
  void BeginStop();
  bool Quiescent() const;
  void DrainLocal();
  void RunTasks(std::vector<std::function<void()>>* tasks);
  void FreeReleased();
  void CloseAll();

  // The once-a-second work (idle connections, summaries; marks muted
  // connections for a retry) and resuming accepts; returns how long Poll
  // may wait. Dispatches nothing itself.
  int RunTimers();
  void CloseIdle();
  void LogSummaries();
  void PauseAccepting();

  void AddConnection(int fd, std::string peer, size_t listener);
  void Refuse(int fd, const std::string& peer, const std::string& why);
  void RecordBadRequest(Connection* c, const std::string& why);
  void RecordTlsFailure(Connection* c);
  void ProcessInput(Connection* c);
  bool TakesRequests(const Connection* c) const;
  // queued.max.request.bytes: may `c` read more? `pending` = the declared
  // size of its incomplete frame (0 = not known yet). Reserves it if so.
  bool ReserveForRead(Connection* c, int64_t pending);
  void ArmReadOrMute(Connection* c, int64_t pending);
  void SetMuted(Connection* c, bool muted);
  void RetryMuted();
  void WakeMutedLoops();
  // Quotas (event_loop_throttle.cc): whether `c` is muted by a throttle;
  // listing it to be resumed; resuming the connections whose throttle ended
  // (returns how long Poll may wait).
  bool Throttled(const Connection* c) const;
  void ListThrottled(Connection* c);
  int ResumeThrottled(int wait_ms);
  void ChargeRequest(Connection* c, int64_t size);
  bool ReleaseRequestBytes(Connection* c);
  void Dispatch(Connection* c, std::span<uint8_t> frame);
  void Deliver(Mailbox::Completion& done);
  void ReleaseReplies(Connection* c);
  void QueueFlush(Connection* c);
  void FlushQueued();
  void Flush(Connection* c);
  void Close(Connection* c, LogLevel level, const std::string& why);

  // IoEvents
  void OnAccept(int fd, size_t listener) override;
  void OnRead(Connection* c, int64_t n) override;
  void OnWriteDone(Connection* c, int err) override;
  void OnWake() override;
  void OnFileNotCached(Connection* c, TransmitQueue::Piece load) override;
  void OnFileLoaded(uint64_t conn_id, const Status& st);
  void BeforeWait() override;
  void AfterWait() override;

  LoopShared* const shared_;
  std::unique_ptr<IoBackend> backend_;
  std::shared_ptr<Mailbox> mailbox_;
  std::vector<int> listen_fds_;
  std::thread thread_;
  std::atomic<bool> stop_requested_{false};

  // Loop thread only.
  bool stopping_ = false;
  std::chrono::steady_clock::time_point deadline_;
  size_t next_loop_ = 0;  // round-robin cursor (acceptor)
  Clock::time_point now_;  // read once per loop turn
  Clock::time_point next_tick_;
  bool accept_paused_ = false;  // acceptor: fds exhausted, listeners unwatched
  Clock::time_point accept_resume_;
  std::chrono::milliseconds accept_backoff_{kMinAcceptBackoff};
  bool retry_muted_ = false;
  std::vector<uint64_t> muted_;  // ids of connections muted for `memory`
  std::vector<uint64_t> throttled_;  // ids of connections with a quota throttle
  std::vector<Connection*> idle_scratch_;
  std::unordered_map<uint64_t, std::unique_ptr<Connection>> conns_;
  std::vector<std::unique_ptr<Connection>> closing_;  // closed, not released
  std::vector<Mailbox::Completion> scratch_;          // DrainLocal
  std::vector<Mailbox::Completion> remote_scratch_;   // OnWake
  std::vector<Mailbox::NewSocket> new_sockets_;       // OnWake
  std::vector<std::function<void()>> remote_tasks_;   // OnWake
  std::vector<std::function<void()>> task_scratch_;   // DrainLocal
  std::vector<Connection*> to_flush_;  // replies queued, Flush() pending
  std::vector<Connection*> flushing_;
  StallClock stall_clock_;
};

}  // namespace headrace::net
