#include "net/server.h"

#include <unistd.h>

#include <string>
#include <thread>

#include "common/logging.h"
#include "net/event_loop.h"
#include "net/socket_util.h"

namespace headrace::net {

const char* BackendName(Backend b) {
  switch (b) {
    case Backend::kAuto: return "auto";
    case Backend::kIoUring: return "io_uring";
    case Backend::kEpoll: return "epoll";
  }
  return "?";
}

Result<Backend> ParseBackend(const std::string& name) {
  if (name == "auto") return Backend::kAuto;
  if (name == "io_uring" || name == "uring") return Backend::kIoUring;
  if (name == "epoll") return Backend::kEpoll;
  return Status::InvalidArgument("unknown network backend '" + name +
                                 "' (expected auto, io_uring or epoll)");
}

Server::Server(ServerOptions options, RequestHandler* handler)
    : options_(std::move(options)), handler_(handler) {}

Server::~Server() { Stop(); }

int Server::active_connections() const {
  return shared_ ? shared_->limits.active() : 0;
}

ConnectionLimits::Totals Server::connection_totals() const {
  return shared_ ? shared_->limits.totals() : ConnectionLimits::Totals{};
}

StallCounters::Totals Server::stall_totals() const {
  return shared_ ? shared_->stalls.totals() : StallCounters::Totals{};
}

Status Server::Listen() {
  if (options_.listeners.empty() || options_.listeners.size() > IoBackend::kMaxListeners) {
    return Status::InvalidArgument("a server needs 1 to " +
                                   std::to_string(IoBackend::kMaxListeners) + " listeners");
  }
  for (const ListenAddress& a : options_.listeners) {
    auto listening = ListenTcp(a.host, a.port, options_.listen_backlog);
    if (!listening.ok()) {
      CloseListeners();
      std::string name = a.name.empty() ? a.host + ":" + std::to_string(a.port) : a.name;
      std::string why = "listener " + name + ": " + listening.status().message();
      return listening.status().code() == StatusCode::kInvalidArgument
                 ? Status::InvalidArgument(why)
                 : Status::IOError(why);
    }
    listen_fds_.push_back(listening->fd);
    ports_.push_back(listening->port);
  }
  return Status::OK();
}

void Server::CloseListeners() {
  for (int fd : listen_fds_) ::close(fd);
  listen_fds_.clear();
}

std::string Server::Describe() const {
  std::string out;
  for (size_t i = 0; i < options_.listeners.size(); ++i) {
    out += (i ? ", " : "") + options_.listeners[i].host + ":" + std::to_string(ports_[i]);
  }
  return out;
}

Status Server::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (started_) return Status::InvalidArgument("server already started");
  if (options_.max_request_bytes <= 0 || options_.max_in_flight_per_connection <= 0) {
    return Status::InvalidArgument("max_request_bytes and max_in_flight must be > 0");
  }
  Backend choice = options_.backend;
  if (choice == Backend::kIoUring && !IoUringAvailable()) {
    return Status::Unsupported("io_uring is not available here (kernel, sysctl or seccomp)");
  }
  if (choice == Backend::kAuto) choice = IoUringAvailable() ? Backend::kIoUring : Backend::kEpoll;
  HR_RETURN_IF_ERROR(CheckCongestionControl(options_.local_congestion_control));

  ports_.clear();
  HR_RETURN_IF_ERROR(Listen());
  Status st = StartLoops(choice);
  if (!st.ok()) StopLoops();
  if (!st.ok() && options_.backend == Backend::kAuto && choice == Backend::kIoUring) {
    HR_LOG(kWarn) << "io_uring setup failed (" << st.ToString() << "); using epoll";
    choice = Backend::kEpoll;
    st = StartLoops(choice);
    if (!st.ok()) StopLoops();
  }
  if (!st.ok()) {
    CloseListeners();
    return st;
  }
  running_backend_ = choice;
  started_ = true;
  HR_LOG(kInfo) << "network: " << BackendName(choice) << " backend, " << loops_.size()
                << " I/O threads, listening on " << Describe();
  for (size_t i = 0; i < options_.listeners.size(); ++i) {
    const ListenAddress& a = options_.listeners[i];
    if (a.tls == nullptr) continue;
    HR_LOG(kInfo) << "listener " << a.listener_name << " on port " << ports_[i]
                  << ": TLS, sending with " << a.tls->send_path();
  }
  return Status::OK();
}

Status Server::StartLoops(Backend b) {
  loops_.clear();
  shared_ = std::make_unique<LoopShared>(options_.max_connections,
                                         options_.max_connections_per_ip,
                                         options_.max_queued_request_bytes,
                                         options_.error_summary_interval);
  LoopShared& s = *shared_;
  s.handler = handler_;
  s.max_request_bytes = options_.max_request_bytes;
  s.max_in_flight = static_cast<size_t>(options_.max_in_flight_per_connection);
  s.max_unsent_bytes = options_.max_unsent_bytes_per_connection;
  s.read_buffer_bytes = options_.read_buffer_bytes;
  s.idle_timeout = options_.idle_timeout;
  s.send_buffer_bytes = options_.send_buffer_bytes;
  s.receive_buffer_bytes = options_.receive_buffer_bytes;
  s.local_congestion_control = options_.local_congestion_control;
  for (const ListenAddress& a : options_.listeners) {
    Session start;
    start.listener_name = a.listener_name;
    start.protocol = a.protocol;
    s.listener_sessions.push_back(std::move(start));
    s.listener_tls.push_back(a.tls);
  }
  s.shutdown_grace = options_.shutdown_grace;
  page_cache_loader_ = std::make_unique<PageCacheLoader>();
  s.page_cache_loader = page_cache_loader_.get();
  int n = options_.io_threads > 0 ? options_.io_threads
                                  : static_cast<int>(std::thread::hardware_concurrency());
  if (n <= 0) n = 1;
  for (int i = 0; i < n; ++i) {
    std::unique_ptr<IoBackend> io = b == Backend::kIoUring
                                        ? MakeUringBackend(options_.io_uring_entries)
                                        : MakeEpollBackend();
    if (io == nullptr) return Status::Unsupported("built without liburing");
    auto loop = std::make_unique<EventLoop>(shared_.get(), std::move(io));
    HR_RETURN_IF_ERROR(loop->Init());
    s.loops.push_back(loop.get());
    loops_.push_back(std::move(loop));
  }
  loops_[0]->SetListeners(listen_fds_);
  for (auto& loop : loops_) HR_RETURN_IF_ERROR(loop->Start());
  return Status::OK();
}

void Server::StopLoops() {
  for (auto& loop : loops_) loop->RequestStop();
  for (auto& loop : loops_) loop->Join();
  loops_.clear();
  page_cache_loader_.reset();  // after the loops: they hand it ranges
}

void Server::Stop() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!started_) return;
  StopLoops();
  CloseListeners();
  started_ = false;
}

}  // namespace headrace::net
