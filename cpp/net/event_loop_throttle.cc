// EventLoop, continued: client quota throttling (KIP-219). A reply that
// carries throttle_ms mutes its connection from the moment it is given:
// nothing more is read from the socket or dispatched from the framer until
// the time has passed (a throttled answer given inside Handle stops the
// requests already framed behind it); replies of requests already in
// flight are still written. The same gate (TakesRequests) guards the read
// arming of both backends.
#include <algorithm>

#include "net/event_loop.h"

namespace headrace::net {
namespace {

int64_t NanosOf(EventLoop::Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

}  // namespace

void ExtendThrottle(std::atomic<int64_t>& until, int32_t ms) {
  const int64_t target = NanosOf(EventLoop::Clock::now()) + int64_t{ms} * 1'000'000;
  int64_t current = until.load(std::memory_order_relaxed);
  while (current < target &&
         !until.compare_exchange_weak(current, target, std::memory_order_release,
                                      std::memory_order_relaxed)) {
  }
}

bool EventLoop::Throttled(const Connection* c) const {
  return c->info.throttled_until->load(std::memory_order_acquire) > NanosOf(now_);
}

void EventLoop::ListThrottled(Connection* c) {
  if (c->throttle_listed) return;
  c->throttle_listed = true;
  throttled_.push_back(c->info.id);
}

int EventLoop::ResumeThrottled(int wait_ms) {
  if (throttled_.empty()) return wait_ms;
  // Swapped: ProcessInput may dispatch requests whose replies list again.
  std::vector<uint64_t> ids;
  ids.swap(throttled_);
  for (uint64_t id : ids) {
    auto it = conns_.find(id);
    if (it == conns_.end()) continue;  // closed meanwhile
    Connection* c = it->second.get();
    const int64_t left_ns = c->info.throttled_until->load(std::memory_order_acquire) - NanosOf(now_);
    if (left_ns > 0) {
      throttled_.push_back(id);
      wait_ms = std::min(wait_ms, static_cast<int>((left_ns + 999'999) / 1'000'000));
      continue;
    }
    c->throttle_listed = false;
    ProcessInput(c);  // dispatches what was framed meanwhile, re-arms the read
  }
  return wait_ms;
}

}  // namespace headrace::net
