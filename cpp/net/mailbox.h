// Mailbox: how other threads hand work to one EventLoop: replies completed
// off the loop's thread (responders), closures to run on the loop's thread
// (LoopExecutor: completions of delayed requests), new sockets from the
// acceptor, and wake-ups. Shared (shared_ptr) between the loop and every Responder it
// created, so a responder called after the connection closed, after Stop()
// or after the Server is gone finds a closed mailbox and drops its reply.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "net/request_handler.h"

namespace headrace::net {

class Mailbox final : public LoopExecutor {
 public:
  struct Completion {
    uint64_t conn_id;
    uint64_t seq;
    Reply reply;
  };
  // A socket the acceptor admitted for this loop, with its PeerName().
  struct NewSocket {
    int fd;
    std::string peer;
    size_t listener;  // index into ServerOptions::listeners
  };

  // Takes ownership of `wake_fd` (an eventfd), closed by Close().
  explicit Mailbox(int wake_fd) : wake_fd_(wake_fd) {}
  ~Mailbox();
  Mailbox(const Mailbox&) = delete;
  Mailbox& operator=(const Mailbox&) = delete;

  // Any thread. On the owning loop's thread the reply is queued without a
  // lock or a wake-up; elsewhere it is queued under the lock and the loop is
  // woken. Dropped when the mailbox is closed.
  void Complete(uint64_t conn_id, uint64_t seq, Reply reply);
  // LoopExecutor: any thread; the task runs on the owning loop's thread
  // after the current event (queued without a lock on that thread).
  // Dropped when the mailbox is closed.
  void Post(std::function<void()> task) override;
  // Any thread. Returns false (caller keeps `socket`) when closed.
  bool PostConnection(NewSocket& socket);
  // Any thread: makes the loop's Poll() return (wake-ups not yet seen by
  // the loop are merged into one).
  void Wake();

  // --- owning loop thread only ---
  void BindToCurrentThread();
  void UnbindFromCurrentThread();
  // Replies completed and tasks posted on the loop's own thread.
  std::vector<Completion>& local() { return local_; }
  std::vector<std::function<void()>>& local_tasks() { return local_tasks_; }
  // Moves out what other threads posted (appends to the vectors).
  void TakeRemote(std::vector<Completion>* completions, std::vector<NewSocket>* sockets,
                  std::vector<std::function<void()>>* tasks);
  // Refuses everything from now on; returns sockets posted but never taken.
  std::vector<NewSocket> Close();
  int wake_fd() const { return wake_fd_; }

 private:
  void WakeLocked();  // REQUIRES: mu_ held, !closed_

  const int wake_fd_;
  std::vector<Completion> local_;  // owner thread only
  std::vector<std::function<void()>> local_tasks_;  // owner thread only
  std::mutex mu_;
  // Guarded by mu_.
  bool closed_ = false;
  bool wake_pending_ = false;  // an eventfd write is not yet consumed
  std::vector<Completion> remote_;
  std::vector<NewSocket> sockets_;
  std::vector<std::function<void()>> tasks_;
};

}  // namespace headrace::net
