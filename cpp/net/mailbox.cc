#include "net/mailbox.h"

#include <unistd.h>

namespace headrace::net {
namespace {
// The mailbox whose loop runs on this thread, if any.
thread_local Mailbox* tls_bound = nullptr;
}  // namespace

Mailbox::~Mailbox() {
  for (const NewSocket& s : Close()) ::close(s.fd);
}

void Mailbox::WakeLocked() {
  uint64_t one = 1;
  // An eventfd write only fails on counter overflow, which cannot happen.
  [[maybe_unused]] ssize_t w = ::write(wake_fd_, &one, sizeof(one));
}

void Mailbox::Complete(uint64_t conn_id, uint64_t seq, Reply reply) {
  if (tls_bound == this) {
    local_.push_back(Completion{conn_id, seq, std::move(reply)});
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return;  // `reply` is destroyed by the caller's frame
  remote_.push_back(Completion{conn_id, seq, std::move(reply)});
  if (!wake_pending_) {
    wake_pending_ = true;
    WakeLocked();
  }
}

void Mailbox::Post(std::function<void()> task) {
  if (tls_bound == this) {
    local_tasks_.push_back(std::move(task));
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return;  // `task` is destroyed by the caller's frame
  tasks_.push_back(std::move(task));
  if (!wake_pending_) {
    wake_pending_ = true;
    WakeLocked();
  }
}

bool Mailbox::PostConnection(NewSocket& socket) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return false;
  sockets_.push_back(std::move(socket));
  if (!wake_pending_) {
    wake_pending_ = true;
    WakeLocked();
  }
  return true;
}

void Mailbox::Wake() {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_ || wake_pending_) return;
  wake_pending_ = true;
  WakeLocked();
}

void Mailbox::BindToCurrentThread() { tls_bound = this; }

void Mailbox::UnbindFromCurrentThread() {
  if (tls_bound == this) tls_bound = nullptr;
}

void Mailbox::TakeRemote(std::vector<Completion>* completions, std::vector<NewSocket>* sockets,
                         std::vector<std::function<void()>>* tasks) {
  std::lock_guard<std::mutex> lock(mu_);
  wake_pending_ = false;
  for (auto& t : tasks_) tasks->push_back(std::move(t));
  tasks_.clear();
  for (auto& c : remote_) completions->push_back(std::move(c));
  remote_.clear();
  for (auto& s : sockets_) sockets->push_back(std::move(s));
  sockets_.clear();
}

std::vector<Mailbox::NewSocket> Mailbox::Close() {
  std::vector<Completion> dropped;
  std::vector<std::function<void()>> dropped_tasks;
  std::vector<NewSocket> orphans;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return orphans;
    closed_ = true;
    dropped.swap(remote_);
    dropped_tasks.swap(tasks_);
    orphans.swap(sockets_);
    ::close(wake_fd_);
  }
  local_.clear();
  local_tasks_.clear();
  return orphans;  // `dropped` replies are destroyed here, outside the lock
}

}  // namespace headrace::net
