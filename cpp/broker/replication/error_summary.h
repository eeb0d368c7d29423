// Summarised WARN lines for the repeated errors of one replica fetcher.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace headrace::broker::replication {

// WARN lines for repeated errors of one fetcher: the first error after a
// success at once, then at most one line per interval with how many errors
// occurred since the last line.
class ErrorSummary {
 public:
  using Clock = std::chrono::steady_clock;
  explicit ErrorSummary(std::string prefix, Clock::duration interval = std::chrono::seconds(30))
      : prefix_(std::move(prefix)), interval_(interval) {}
  void Note(const std::string& what);
  // A pass went through without any error: the next error is logged at
  // once; errors not reported yet are summed up in one INFO line.
  void Success();
  // Lines written so far (WARN and INFO), for tests.
  uint64_t lines() const { return lines_; }

 private:
  const std::string prefix_;
  const Clock::duration interval_;
  bool quiet_ = true;  // no error since the last success: log the next at once
  uint64_t unreported_ = 0;
  std::string last_unreported_;
  Clock::time_point last_line_{};
  uint64_t lines_ = 0;
};

}  // namespace headrace::broker::replication
