// EventSummary: keeps a flood of similar events (malformed requests,
// refused connections, failed accepts) down to a few log lines. The first
// event after a quiet interval is logged by the caller as it happens; the
// ones after it are only counted, and summarised once per interval:
//   "12 malformed or refused requests from 3 connections in the last 10 s;
//    last: <what> from <peer>"
// Thread-safe (a mutex; only error paths and a once-a-second tick use it).
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>

namespace headrace::net {

class EventSummary {
 public:
  using Clock = std::chrono::steady_clock;

  // `what`: the plural noun of the summary line ("malformed requests").
  explicit EventSummary(std::string what,
                        std::chrono::milliseconds interval = std::chrono::seconds(10));

  // Records one event from `source` (a connection id; 0 = not counted as a
  // connection), described by `last`. Returns true when the caller should
  // log this event itself: no line was written in the last interval.
  bool Record(Clock::time_point now, uint64_t source, std::string_view last);
  // The summary of the events counted since the last line, once an interval
  // has passed since that line; "" otherwise. Call it about once a second.
  std::string TakeSummary(Clock::time_point now);

 private:
  static constexpr size_t kMaxSources = 100000;  // bounds the memory of a flood

  const std::string what_;
  const std::chrono::milliseconds interval_;
  std::mutex mu_;  // guards the fields below
  bool any_line_ = false;
  Clock::time_point last_line_{};
  uint64_t count_ = 0;
  std::unordered_set<uint64_t> sources_;
  std::string last_;
};

}  // namespace headrace::net
