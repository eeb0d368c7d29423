// A tiny logger: one line per message to stderr, with a UTC timestamp and a
// level, written with a single write(2) so lines from different threads never
// interleave. Format:
//   2025-01-31T12:00:00.123Z WARN headrace: closing 127.0.0.1:5555: ...
// Use HR_LOG(kWarn) << "closing " << peer << ": " << why;
#pragma once

#include <sstream>
#include <string_view>

namespace headrace {

enum class LogLevel : int { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

// Messages below `level` are dropped. Default kInfo, or the environment
// variable HEADRACE_LOG_LEVEL (debug|info|warn|error) read on first use.
void SetLogLevel(LogLevel level);
bool LogEnabled(LogLevel level);

// Writes one line (a trailing newline is added). Thread-safe.
void LogMessage(LogLevel level, std::string_view message);

// Collects one message and writes it when destroyed (end of the statement).
class LogStream {
 public:
  explicit LogStream(LogLevel level) : level_(level) {}
  ~LogStream() { LogMessage(level_, os_.str()); }
  LogStream(const LogStream&) = delete;
  LogStream& operator=(const LogStream&) = delete;
  template <typename T>
  LogStream& operator<<(const T& v) {
    os_ << v;
    return *this;
  }

 private:
  LogLevel level_;
  std::ostringstream os_;
};

}  // namespace headrace

// HR_LOG(kInfo) << ...; the arguments are not evaluated when the level is off.
#define HR_LOG(level)                                           \
  if (!::headrace::LogEnabled(::headrace::LogLevel::level)) {   \
  } else                                                        \
    ::headrace::LogStream(::headrace::LogLevel::level)
