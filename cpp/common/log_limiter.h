// Rate-limited log lines for events that can repeat in floods (a full disk
// seen by every partition, the same failure on every request): per key, the
// first event is logged at once, the next ones within `interval` are only
// counted, and the first event after the interval is logged with how many
// were left out ("(37 more like it since the last such line)").
// Thread-safe (a mutex; only error paths use it).
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace headrace {

class LogLimiter {
 public:
  using Clock = std::chrono::steady_clock;

  explicit LogLimiter(std::chrono::milliseconds interval = std::chrono::seconds(10))
      : interval_(interval) {}

  // Whether the caller should write this event's line now. When it should,
  // *suppressed is the number of events of `key` left out since the last line
  // (0 for the first).
  bool Admit(std::string_view key, Clock::time_point now, uint64_t* suppressed);
  bool Admit(std::string_view key, uint64_t* suppressed) {
    return Admit(key, Clock::now(), suppressed);
  }

  // The suffix a line gets for `suppressed` left-out events ("" for 0).
  std::string SuppressedNote(uint64_t suppressed) const;

 private:
  static constexpr size_t kMaxKeys = 4096;  // bounds the memory of a flood of keys
  struct State {
    Clock::time_point last_line{};
    uint64_t suppressed = 0;
  };
  const std::chrono::milliseconds interval_;
  std::mutex mu_;  // guards keys_
  std::unordered_map<std::string, State> keys_;
};

// The process-wide limiter of storage error lines (one key per log directory
// and kind of failure).
LogLimiter& StorageErrorLogLimiter();

}  // namespace headrace
