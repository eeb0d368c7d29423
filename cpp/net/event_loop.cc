#include "net/event_loop.h"

#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "net/socket_util.h"

namespace headrace::net {
namespace {

using Clock = std::chrono::steady_clock;

// Peers going away are routine; other socket errors are worth a line.
LogLevel LevelForErrno(int err) {
  return (err == EPIPE || err == ECONNRESET || err == ETIMEDOUT) ? LogLevel::kDebug
                                                                  : LogLevel::kInfo;
}

std::string BadSizeReason(int64_t size, int64_t max) {
  if (size <= 0) return "invalid request size " + std::to_string(size);
  return "request size " + std::to_string(size) + " exceeds socket.request.max.bytes " +
         std::to_string(max);
}

}  // namespace

EventLoop::EventLoop(LoopShared* shared, std::unique_ptr<IoBackend> backend)
    : shared_(shared), backend_(std::move(backend)) {}

EventLoop::~EventLoop() {
  Join();
  // Connections the kernel might still write into are leaked, not freed.
  for (auto& c : closing_) {
    if (!c->released) (void)c.release();
  }
}

Status EventLoop::Init() {
  int efd = eventfd(0, EFD_CLOEXEC);
  if (efd < 0) return Status::FromErrno("eventfd", errno);
  mailbox_ = std::make_shared<Mailbox>(efd);
  return Status::OK();
}

Status EventLoop::Start() {
  std::promise<Status> started;
  std::future<Status> result = started.get_future();
  thread_ = std::thread([this, &started] { Run(&started); });
  Status st = result.get();
  if (!st.ok()) Join();
  return st;
}

void EventLoop::RequestStop() {
  stop_requested_.store(true, std::memory_order_release);
  mailbox_->Wake();
}

void EventLoop::Join() {
  if (thread_.joinable()) thread_.join();
}

void EventLoop::Run(std::promise<Status>* started) {
  NameThread();  // before Start() returns
  Status init = backend_->Init(this, mailbox_->wake_fd());
  bool ok = init.ok();
  started->set_value(std::move(init));  // `started` is gone after this
  if (!ok) return;
  // EPIPE is reported by the calls; no SIGPIPE may kill the process.
  sigset_t pipe_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, nullptr);
  mailbox_->BindToCurrentThread();
  if (!listen_fds_.empty()) backend_->WatchListeners(listen_fds_);
  now_ = Clock::now();
  next_tick_ = now_ + kTick;
  for (;;) {
    if (!stopping_ && stop_requested_.load(std::memory_order_acquire)) BeginStop();
    int timeout_ms = RunTimers();
    DrainLocal();
    while (retry_muted_) {  // replies released bytes: muted connections may read
      RetryMuted();
      DrainLocal();
    }
    FreeReleased();
    if (stopping_) {
      if (Quiescent() || now_ >= deadline_) break;
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - now_);
      timeout_ms = std::min(timeout_ms, static_cast<int>(left.count()) + 1);
    }
    backend_->Poll(timeout_ms);
    now_ = Clock::now();
  }
  CloseAll();
  DrainLocal();  // replies given from OnClose find no connection: dropped
  Clock::time_point give_up = Clock::now() + std::chrono::seconds(2);
  for (FreeReleased(); !closing_.empty() && Clock::now() < give_up; FreeReleased()) {
    backend_->Poll(10);
  }
  backend_->Shutdown();
  mailbox_->UnbindFromCurrentThread();
  for (Mailbox::NewSocket& s : mailbox_->Close()) {  // posted by the acceptor, never adopted
    ::close(s.fd);
    shared_->limits.Release(std::string(IpOfPeer(s.peer)));
  }
}

void EventLoop::NameThread() {
  // "hr-net-N" (N = loop index) for top -H, perf and /proc/PID/task/*/comm.
  auto it = std::find(shared_->loops.begin(), shared_->loops.end(), this);
  std::string name = "hr-net-" + std::to_string(it - shared_->loops.begin());
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
}

void EventLoop::BeginStop() {
  stopping_ = true;
  deadline_ = Clock::now() + shared_->shutdown_grace;
  if (!listen_fds_.empty()) backend_->UnwatchListeners();
  accept_paused_ = false;
}

bool EventLoop::Quiescent() const {
  for (const auto& [id, c] : conns_) {
    if (c->responses.in_flight() > 0 || !c->out.empty() || c->write_armed) return false;
  }
  return true;
}

void EventLoop::DrainLocal() {
  while (!mailbox_->local().empty() || !mailbox_->local_tasks().empty() || !to_flush_.empty()) {
    task_scratch_.swap(mailbox_->local_tasks());
    RunTasks(&task_scratch_);
    scratch_.swap(mailbox_->local());
    for (auto& done : scratch_) Deliver(done);
    scratch_.clear();
    FlushQueued();
  }
}

void EventLoop::RunTasks(std::vector<std::function<void()>>* tasks) {
  // A task may post more tasks or complete replies: both land in the
  // mailbox's local queues, drained by DrainLocal, never in `tasks`.
  for (auto& task : *tasks) task();
  tasks->clear();
}

void EventLoop::QueueFlush(Connection* c) {
  if (c->flush_queued) return;
  c->flush_queued = true;
  to_flush_.push_back(c);
}

void EventLoop::FlushQueued() {
  // Closed connections stay allocated until FreeReleased(), which runs only
  // after this list is empty.
  flushing_.swap(to_flush_);
  for (Connection* c : flushing_) {
    c->flush_queued = false;
    Flush(c);
  }
  flushing_.clear();
}

void EventLoop::FreeReleased() {
  std::erase_if(closing_, [](const std::unique_ptr<Connection>& c) { return c->released; });
}

void EventLoop::CloseAll() {
  std::vector<Connection*> all;
  all.reserve(conns_.size());
  for (auto& [id, c] : conns_) all.push_back(c.get());
  for (Connection* c : all) Close(c, LogLevel::kDebug, "server stopping");
}

void EventLoop::AddConnection(int fd, std::string peer, size_t listener) {
  if (stopping_) {
    ::close(fd);
    shared_->limits.Release(std::string(IpOfPeer(peer)));
    return;
  }
  TuneAcceptedSocket(fd, shared_->send_buffer_bytes, shared_->receive_buffer_bytes,
                     shared_->local_congestion_control);
  uint64_t id = shared_->next_connection_id.fetch_add(1);
  auto owned = std::make_unique<Connection>(
      fd,
      ConnectionInfo{id, std::move(peer), mailbox_,
                     std::make_shared<Session>(shared_->listener_sessions.at(listener)),
                     std::make_shared<std::atomic<int64_t>>(0)},
      shared_->read_buffer_bytes);
  Connection* c = owned.get();
  if (const auto& tls = shared_->listener_tls.at(listener)) {
    c->tls = std::make_unique<TlsTransport>(tls, fd, c->info.session.get());
  }
  c->last_activity = now_;
  conns_.emplace(id, std::move(owned));
  backend_->Attach(c);
  ProcessInput(c);
}

bool EventLoop::TakesRequests(const Connection* c) const {
  return !stopping_ && !c->closed && !c->close_after_flush && !Throttled(c) &&
         c->responses.in_flight() < shared_->max_in_flight &&
         c->out.unsent_bytes() <= shared_->max_unsent_bytes;
}

void EventLoop::ProcessInput(Connection* c) {
  int64_t pending = 0;  // declared size of an incomplete frame
  while (TakesRequests(c)) {
    Framer::Result r = c->framer.Next(shared_->max_request_bytes);
    if (r.status == Framer::Status::kNeedMore) {
      pending = r.size;
      break;
    }
    if (r.status == Framer::Status::kBadSize) {
      RecordBadRequest(c, BadSizeReason(r.size, shared_->max_request_bytes));
      Close(c, LogLevel::kDebug, "bad request size");
      return;
    }
    ChargeRequest(c, r.size);
    Dispatch(c, r.frame);
  }
  if (TakesRequests(c) && !c->read_armed && !c->muted) ArmReadOrMute(c, pending);
}

void EventLoop::Dispatch(Connection* c, std::span<uint8_t> frame) {
  uint64_t seq = c->responses.Push();
  Responder respond = [mailbox = mailbox_, id = c->info.id, seq,
                       until = c->info.throttled_until](Reply reply) {
    if (reply.throttle_ms > 0) ExtendThrottle(*until, reply.throttle_ms);
    mailbox->Complete(id, seq, std::move(reply));
  };
  shared_->handler->Handle(c->info, frame, std::move(respond));
}

void EventLoop::Deliver(Mailbox::Completion& done) {
  auto it = conns_.find(done.conn_id);
  if (it == conns_.end()) return;  // closed meanwhile: drop the reply
  Connection* c = it->second.get();
  if (!c->responses.Fill(done.seq, std::move(done.reply))) return;
  ReleaseReplies(c);
}

void EventLoop::ReleaseReplies(Connection* c) {
  bool released = false;
  while (std::optional<Reply> r = c->responses.PopReady()) {
    released |= ReleaseRequestBytes(c);
    if (c->close_after_flush) continue;  // replies after a kClose are dropped
    if (r->throttle_ms > 0) ListThrottled(c);
    switch (r->kind) {
      case Reply::Kind::kRespond:
        c->out.Push(std::move(r->body));
        if (r->close_after) c->close_after_flush = true;  // later replies are dropped
        break;
      case Reply::Kind::kNoResponse:
        break;
      case Reply::Kind::kClose:
        RecordBadRequest(c, r->close_reason);
        c->close_after_flush = true;
        break;
    }
  }
  if (released) WakeMutedLoops();
  // Written after the current batch of completions, so that replies that
  // become ready together leave in one sendmsg.
  QueueFlush(c);
  ProcessInput(c);
}

void EventLoop::Flush(Connection* c) {
  if (c->closed || c->write_armed) return;
  if (!c->out.empty()) {
    c->write_armed = true;
    int r = backend_->ArmWrite(c);
    if (r == 1) return;
    c->write_armed = false;
    if (r < 0) {
      Close(c, LevelForErrno(-r), std::string("write: ") + std::strerror(-r));
      return;
    }
  }
  if (c->close_after_flush) Close(c, LogLevel::kDebug, "closed by handler");
}

void EventLoop::Close(Connection* c, LogLevel level, const std::string& why) {
  if (c->closed) return;
  c->closed = true;
  if (LogEnabled(level)) LogMessage(level, "closing " + c->info.peer + ": " + why);
  backend_->Detach(c);
  SetMuted(c, false);
  bool released = false;
  while (ReleaseRequestBytes(c)) released = true;
  if (c->reserved_bytes > 0) {
    shared_->memory.Release(c->reserved_bytes);
    c->reserved_bytes = 0;
    released = true;
  }
  if (released) WakeMutedLoops();
  auto it = conns_.find(c->info.id);
  closing_.push_back(std::move(it->second));
  conns_.erase(it);
  shared_->limits.Release(std::string(IpOfPeer(c->info.peer)));
  shared_->handler->OnClose(c->info);
}

void EventLoop::BeforeWait() {
  std::optional<StallClock::Stall> s = stall_clock_.TurnEnds();
  if (!s) return;
  shared_->stalls.Add(*s);
  auto ms = [](std::chrono::microseconds us) { return std::to_string(us.count() / 1000); };
  std::string what = "off CPU " + ms(s->off_cpu) + " ms of a " + ms(s->wall) + " ms turn";
  if (s->run_delay.count() >= 1000) what += ", " + ms(s->run_delay) + " ms more waiting for a CPU";
  if (shared_->stall_lines.Record(Clock::now(), 0, what)) {
    char name[16] = "";
    pthread_getname_np(pthread_self(), name, sizeof(name));
    HR_LOG(kWarn) << "network thread " << name << " stalled: " << what
                  << " in a blocking call (a disk write, a page fault or a lock); every "
                     "connection of this thread waited (repeats are summarised)";
  }
}

void EventLoop::AfterWait() { stall_clock_.TurnBegins(); }

void EventLoop::RecordBadRequest(Connection* c, const std::string& why) {
  if (shared_->bad_requests.Record(now_, c->info.id, why + " from " + c->info.peer)) {
    HR_LOG(kWarn) << "closing " << c->info.peer << ": " << why
                  << " (repeats are summarised)";
  }
}

void EventLoop::RecordTlsFailure(Connection* c) {
  c->tls->DiscardInput();
  const std::string& why = c->tls->error();
  if (shared_->tls_failures.Record(now_, c->info.id, why + " from " + c->info.peer)) {
    HR_LOG(kWarn) << "closing " << c->info.peer << " (listener "
                  << c->info.session->listener_name << "): " << why
                  << " (repeats are summarised)";
  }
}

void EventLoop::OnRead(Connection* c, int64_t n) {
  c->read_armed = false;
  if (c->closed) return;
  if (n == -EPROTO && c->tls) {
    RecordTlsFailure(c);
    Close(c, LogLevel::kDebug, "TLS failure");
    return;
  }
  if (n == -EAGAIN || n == -EINTR || n == -ENOBUFS) {
    ProcessInput(c);  // re-arms
    return;
  }
  if (n == 0) {
    Close(c, LogLevel::kDebug, "peer closed");
    return;
  }
  if (n < 0) {
    Close(c, LevelForErrno(static_cast<int>(-n)),
          std::string("read: ") + std::strerror(static_cast<int>(-n)));
    return;
  }
  c->framer.Commit(static_cast<size_t>(n));
  c->last_activity = now_;
  ProcessInput(c);
}

void EventLoop::OnWriteDone(Connection* c, int err) {
  c->write_armed = false;
  if (c->closed) return;
  if (err == -EPROTO && c->tls) {
    RecordTlsFailure(c);
    Close(c, LogLevel::kDebug, "TLS failure");
    return;
  }
  if (err < 0) {
    Close(c, LevelForErrno(-err), std::string("write: ") + std::strerror(-err));
    return;
  }
  c->last_activity = now_;
  Flush(c);  // more replies may have been queued; or close after kClose
  if (!c->closed) ProcessInput(c);  // output drained: reading may resume
}

void EventLoop::OnWake() {
  // Not re-entered: nothing below calls OnWake, so the scratch vectors are
  // reused across wake-ups without reallocating.
  mailbox_->TakeRemote(&remote_scratch_, &new_sockets_, &remote_tasks_);
  for (Mailbox::NewSocket& s : new_sockets_) AddConnection(s.fd, std::move(s.peer), s.listener);
  new_sockets_.clear();
  RunTasks(&remote_tasks_);
  for (auto& d : remote_scratch_) Deliver(d);
  remote_scratch_.clear();
  retry_muted_ = !muted_.empty();  // another loop may have released memory
}

void EventLoop::OnFileNotCached(Connection* c, TransmitQueue::Piece load) {
  FileSlice range{.fd = load.file_fd,
                  .position = FilePosition(load.file_offset),
                  .length = load.file_length,
                  .keepalive = std::move(load.file_keepalive)};
  // The completion runs on a loader thread and reaches this loop through the
  // mailbox (dropped once it is closed); the connection is found by id, so
  // one closed meanwhile is simply not resumed.
  shared_->page_cache_loader->Load(
      std::move(range), [this, mailbox = mailbox_, id = c->info.id](Status st) {
        mailbox->Post([this, id, st = std::move(st)] { OnFileLoaded(id, st); });
      });
}

void EventLoop::OnFileLoaded(uint64_t conn_id, const Status& st) {
  auto it = conns_.find(conn_id);
  if (it == conns_.end()) return;  // closed while its file range was loaded
  Connection* c = it->second.get();
  if (!st.ok()) {
    Close(c, LogLevel::kWarn, "reading a file range to send: " + st.ToString());
    return;
  }
  c->out.MarkLoaded();
  int r = backend_->ArmWrite(c);
  if (r != 1) OnWriteDone(c, r);
}

}  // namespace headrace::net
