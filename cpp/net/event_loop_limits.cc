// EventLoop, continued: accepting (with back-off when file descriptors run
// out), connection limits, the once-a-second tick (idle connections, error
// summaries) and the request memory cap (muting connections).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "net/event_loop.h"
#include "net/socket_util.h"

namespace headrace::net {
namespace {

// Accept errors that mean "no file descriptor or memory for one more
// socket": retrying at once would spin; the acceptor pauses instead.
bool OutOfDescriptors(int err) {
  return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
}

int MillisUntil(EventLoop::Clock::time_point now, EventLoop::Clock::time_point then) {
  if (then <= now) return 0;
  return static_cast<int>(
             std::chrono::duration_cast<std::chrono::milliseconds>(then - now).count()) + 1;
}

}  // namespace

// --- accepting -------------------------------------------------------------

void EventLoop::OnAccept(int fd, size_t listener) {
  if (fd < 0) {
    int err = -fd;
    if (err == EAGAIN || err == EINTR || err == ECONNABORTED || err == ECANCELED) return;
    if (OutOfDescriptors(err)) {
      PauseAccepting();
    } else if (shared_->accept_errors.Record(now_, 0, std::strerror(err))) {
      HR_LOG(kWarn) << "accept: " << std::strerror(err);
    }
    return;
  }
  accept_backoff_ = kMinAcceptBackoff;
  if (stopping_) {
    ::close(fd);
    return;
  }
  std::string peer = PeerName(fd);
  switch (shared_->limits.Admit(std::string(IpOfPeer(peer)))) {
    case ConnectionLimits::Verdict::kAdmitted:
      break;
    case ConnectionLimits::Verdict::kOverTotal:
      Refuse(fd, peer, "max.connections reached");
      return;
    case ConnectionLimits::Verdict::kOverPerIp:
      Refuse(fd, peer, "max.connections.per.ip reached");
      return;
  }
  EventLoop* target = shared_->loops[next_loop_++ % shared_->loops.size()];
  if (target == this) {
    AddConnection(fd, std::move(peer), listener);
    return;
  }
  Mailbox::NewSocket socket{fd, std::move(peer), listener};
  if (!target->mailbox().PostConnection(socket)) {
    ::close(fd);
    shared_->limits.Release(std::string(IpOfPeer(socket.peer)));
  }
}

void EventLoop::Refuse(int fd, const std::string& peer, const std::string& why) {
  ::close(fd);  // at once, as Kafka does
  if (shared_->refused_connections.Record(now_, 0, why + ": " + peer)) {
    HR_LOG(kWarn) << "closing " << peer << ": " << why << " (repeats are summarised)";
  }
}

void EventLoop::PauseAccepting() {
  if (accept_paused_ || listen_fds_.empty()) return;
  backend_->UnwatchListeners();
  accept_paused_ = true;
  accept_resume_ = now_ + accept_backoff_;
  if (shared_->accept_errors.Record(now_, 0, "out of file descriptors")) {
    HR_LOG(kWarn) << "accept: " << std::strerror(EMFILE) << " (file descriptors exhausted); "
                  << "not accepting for " << accept_backoff_.count()
                  << " ms, up to 1 s while it lasts (repeats are summarised)";
  }
  accept_backoff_ = std::min(accept_backoff_ * 2, kMaxAcceptBackoff);
}

// --- the tick ----------------------------------------------------------------

int EventLoop::RunTimers() {
  if (accept_paused_ && now_ >= accept_resume_) {
    accept_paused_ = false;
    if (!stopping_) backend_->WatchListeners(listen_fds_);
  }
  if (now_ >= next_tick_) {
    next_tick_ = now_ + kTick;
    if (!stopping_) CloseIdle();
    LogSummaries();
    retry_muted_ = !muted_.empty();  // backstop for a missed wake-up
  }
  int wait = MillisUntil(now_, next_tick_);
  if (accept_paused_) wait = std::min(wait, MillisUntil(now_, accept_resume_));
  return ResumeThrottled(wait);
}

void EventLoop::CloseIdle() {
  if (shared_->idle_timeout.count() < 0) return;
  Clock::time_point cutoff = now_ - shared_->idle_timeout;
  idle_scratch_.clear();
  for (auto& [id, c] : conns_) {
    if (c->last_activity <= cutoff && c->responses.in_flight() == 0 && c->out.empty() &&
        !c->write_armed && !c->muted) {
      idle_scratch_.push_back(c.get());
    }
  }
  for (Connection* c : idle_scratch_) {
    Close(c, LogLevel::kDebug,
          "idle for connections.max.idle.ms=" + std::to_string(shared_->idle_timeout.count()));
  }
  idle_scratch_.clear();
}

void EventLoop::LogSummaries() {
  for (EventSummary* s :
       {&shared_->bad_requests, &shared_->refused_connections, &shared_->accept_errors,
        &shared_->tls_failures, &shared_->stall_lines}) {
    std::string line = s->TakeSummary(now_);
    if (!line.empty()) {
      HR_LOG(kWarn) << line;
    }
  }
}

// --- request memory (queued.max.request.bytes) -------------------------------

bool EventLoop::ReserveForRead(Connection* c, int64_t pending) {
  RequestMemory& memory = shared_->memory;
  if (!memory.limited() || c->reserved_bytes > 0) return true;
  if (pending <= 0) return !memory.Full();
  if (!memory.TryReserve(pending)) return false;
  c->reserved_bytes = pending;
  return true;
}

void EventLoop::ArmReadOrMute(Connection* c, int64_t pending) {
  if (!ReserveForRead(c, pending)) {
    // Muted before the re-check, so a release in between wakes this loop.
    SetMuted(c, true);
    if (!ReserveForRead(c, pending)) return;
    SetMuted(c, false);
  }
  c->framer.PrepareRead();
  c->read_armed = true;
  backend_->ArmRead(c);
}

void EventLoop::SetMuted(Connection* c, bool muted) {
  if (c->muted == muted) return;
  c->muted = muted;
  if (muted) {
    muted_.push_back(c->info.id);
    shared_->muted_connections.fetch_add(1);
  } else {
    shared_->muted_connections.fetch_sub(1);
  }
}

void EventLoop::RetryMuted() {
  retry_muted_ = false;
  std::vector<uint64_t> ids;
  ids.swap(muted_);
  for (uint64_t id : ids) {
    auto it = conns_.find(id);
    if (it == conns_.end() || !it->second->muted) continue;
    Connection* c = it->second.get();
    SetMuted(c, false);
    ProcessInput(c);  // mutes it again if memory is still short
  }
}

void EventLoop::WakeMutedLoops() {
  if (shared_->muted_connections.load() == 0) return;
  for (EventLoop* loop : shared_->loops) {
    if (loop == this) {
      retry_muted_ = !muted_.empty();
    } else {
      loop->mailbox().Wake();
    }
  }
}

void EventLoop::ChargeRequest(Connection* c, int64_t size) {
  RequestMemory& memory = shared_->memory;
  if (!memory.limited()) return;
  if (c->reserved_bytes != size) memory.Charge(size - c->reserved_bytes);
  c->reserved_bytes = 0;  // the reservation (if any) now pays for this request
  c->request_bytes.push_back(size);
}

bool EventLoop::ReleaseRequestBytes(Connection* c) {
  if (c->request_bytes.empty()) return false;
  shared_->memory.Release(c->request_bytes.front());
  c->request_bytes.pop_front();
  return true;
}

}  // namespace headrace::net
