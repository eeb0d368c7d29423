// EventLoop: one I/O thread. Owns its connections, an IoBackend and a
// Mailbox. Holds all backend-independent logic: framing, dispatch to the
// RequestHandler, in-order release of replies, backpressure, limits and the
// graceful stop. Loop 0 also accepts and spreads new sockets round-robin over
// all loops (through their mailboxes).
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
#include "net/io_backend.h"
#include "net/mailbox.h"
#include "net/page_cache_loader.h"
#include "net/request_handler.h"

namespace headrace::net {

class EventLoop;

// Settings and counters shared by all loops of one Server; outlives them.
struct LoopShared {
  RequestHandler* handler = nullptr;
  int64_t max_request_bytes = 0;
  size_t max_in_flight = 0;
  int64_t max_unsent_bytes = 0;
  size_t read_buffer_bytes = 0;
  int max_connections = 0;  // 0 = no limit
  int send_buffer_bytes = -1;
  int receive_buffer_bytes = -1;
  std::chrono::milliseconds shutdown_grace{5000};
  std::atomic<int> active_connections{0};
  std::atomic<uint64_t> next_connection_id{1};
  std::vector<EventLoop*> loops;  // fixed before any loop starts
  PageCacheLoader* page_cache_loader = nullptr;  // outlives the loops' threads
};

class EventLoop final : private IoEvents {
 public:
  EventLoop(LoopShared* shared, std::unique_ptr<IoBackend> backend);
  ~EventLoop() override;

  // Creates the wake eventfd and the mailbox.
  Status Init();
  // This loop accepts on `fd` (not owned). REQUIRES: before Start().
  void SetListener(int fd) { listen_fd_ = fd; }
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

  void AddConnection(int fd);
  void ProcessInput(Connection* c);
  bool TakesRequests(const Connection* c) const;
  void Dispatch(Connection* c, std::span<uint8_t> frame);
  void Deliver(Mailbox::Completion& done);
  void ReleaseReplies(Connection* c);
  void QueueFlush(Connection* c);
  void FlushQueued();
  void Flush(Connection* c);
  void Close(Connection* c, LogLevel level, const std::string& why);

  // IoEvents
  void OnAccept(int fd) override;
  void OnRead(Connection* c, int64_t n) override;
  void OnWriteDone(Connection* c, int err) override;
  void OnWake() override;
  void OnFileNotCached(Connection* c, TransmitQueue::Piece load) override;
  void OnFileLoaded(uint64_t conn_id, const Status& st);

  LoopShared* const shared_;
  std::unique_ptr<IoBackend> backend_;
  std::shared_ptr<Mailbox> mailbox_;
  int listen_fd_ = -1;
  std::thread thread_;
  std::atomic<bool> stop_requested_{false};

  // Loop thread only.
  bool stopping_ = false;
  std::chrono::steady_clock::time_point deadline_;
  size_t next_loop_ = 0;  // round-robin cursor (acceptor)
  std::unordered_map<uint64_t, std::unique_ptr<Connection>> conns_;
  std::vector<std::unique_ptr<Connection>> closing_;  // closed, not released
  std::vector<Mailbox::Completion> scratch_;          // DrainLocal
  std::vector<Mailbox::Completion> remote_scratch_;   // OnWake
  std::vector<int> new_fds_;                          // OnWake
  std::vector<std::function<void()>> remote_tasks_;   // OnWake
  std::vector<std::function<void()>> task_scratch_;   // DrainLocal
  std::vector<Connection*> to_flush_;  // replies queued, Flush() pending
  std::vector<Connection*> flushing_;
};

}  // namespace headrace::net
