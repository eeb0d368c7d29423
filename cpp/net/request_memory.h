// RequestMemory: the bytes held by requests across all connections of one
// Server (queued.max.request.bytes): requests being received once their
// size is known, and requests handed to the handler until their reply is
// released. Over the cap, connections stop being read (EventLoop mutes
// them) until bytes are released. Thread-safe (one atomic counter).
#pragma once

#include <atomic>
#include <cstdint>

namespace headrace::net {

class RequestMemory {
 public:
  // cap <= 0: no limit (nothing is counted).
  explicit RequestMemory(int64_t cap) : cap_(cap) {}

  bool limited() const { return cap_ > 0; }
  // Reserves `n` bytes when they fit under the cap, or when nothing is held
  // at all (so one request larger than the cap still goes through alone).
  bool TryReserve(int64_t n);
  // Counts `n` bytes without a check (bytes that are already in memory).
  void Charge(int64_t n) { held_.fetch_add(n, std::memory_order_relaxed); }
  void Release(int64_t n) { held_.fetch_sub(n, std::memory_order_acq_rel); }
  // True when nothing more fits: a connection without a reservation waits.
  bool Full() const { return limited() && held_.load(std::memory_order_acquire) >= cap_; }
  int64_t held() const { return held_.load(std::memory_order_acquire); }

 private:
  const int64_t cap_;
  std::atomic<int64_t> held_{0};
};

inline bool RequestMemory::TryReserve(int64_t n) {
  int64_t held = held_.load(std::memory_order_acquire);
  do {
    if (held != 0 && held + n > cap_) return false;
  } while (!held_.compare_exchange_weak(held, held + n, std::memory_order_acq_rel));
  return true;
}

}  // namespace headrace::net
