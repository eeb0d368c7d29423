// The broker's logger: one line per message to stderr, written with a single
// write(2) so lines from different threads never interleave. Two formats
// (SetLogFormat, or HEADRACE_LOG_FORMAT=text|json read on first use):
//   text: 2026-11-25T12:00:00.123Z WARN headrace: closing 127.0.0.1:5555: ...
//   json: {"ts":"2026-11-25T12:00:00.123Z","level":"WARN","logger":"headrace",
//          "msg":"closing 127.0.0.1:5555: ...","peer":"127.0.0.1:5555"}
// The Python side (headrace.logs) writes the same two formats, so every line
// of a broker process parses the same way.
//
//   HR_LOG(kWarn) << "closing " << peer << ": " << why;
//   HR_LOG_TO(kInfo, "headrace.topic").With("topic", name).With("partitions", n)
//       << "created topic " << name;
// Fields (With) appear in JSON lines only; the message text must say the same
// thing in prose for the text format. A field whose key is one of ts, level,
// logger or msg is dropped.
#pragma once

#include <cstdint>
#include <ctime>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace headrace {

enum class LogLevel : int { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };
enum class LogFormat : int { kText = 0, kJson = 1 };

// Messages below `level` are dropped. Default kInfo, or the environment
// variable HEADRACE_LOG_LEVEL (debug|info|warn|error) read on first use.
void SetLogLevel(LogLevel level);
bool LogEnabled(LogLevel level);

// Default kText, or HEADRACE_LOG_FORMAT (text|json) read on first use.
void SetLogFormat(LogFormat format);
LogFormat GetLogFormat();
// "text" / "json" (case-insensitive); false for anything else.
bool ParseLogFormat(std::string_view name, LogFormat* out);

// One structured field of a JSON line: a string (escaped) or a number/bool
// literal written as it is.
struct LogField {
  std::string key;
  std::string value;
  bool literal = false;  // true: value is a JSON number or true/false
};

// The line (with its trailing newline) a message becomes; pure, for tests.
std::string FormatLogLine(LogFormat format, const timespec& when, LogLevel level,
                          std::string_view logger, std::string_view message,
                          const std::vector<LogField>& fields);

// Writes one line (a trailing newline is added). Thread-safe.
void LogMessage(LogLevel level, std::string_view message);
void LogMessage(LogLevel level, std::string_view logger, std::string_view message,
                const std::vector<LogField>& fields);

// Collects one message and writes it when destroyed (end of the statement).
class LogStream {
 public:
  explicit LogStream(LogLevel level, std::string_view logger = "headrace")
      : level_(level), logger_(logger) {}
  ~LogStream() { LogMessage(level_, logger_, os_.str(), fields_); }
  LogStream(const LogStream&) = delete;
  LogStream& operator=(const LogStream&) = delete;

  LogStream& With(std::string_view key, std::string_view value) {
    fields_.push_back({std::string(key), std::string(value), false});
    return *this;
  }
  LogStream& With(std::string_view key, const char* value) {
    return With(key, std::string_view(value));
  }
  LogStream& With(std::string_view key, const std::string& value) {
    return With(key, std::string_view(value));
  }
  LogStream& With(std::string_view key, bool value) {
    fields_.push_back({std::string(key), value ? "true" : "false", true});
    return *this;
  }
  template <typename Int>
  LogStream& With(std::string_view key, Int value) {
    static_assert(std::is_integral_v<Int>, "With(): string, bool or integer values");
    fields_.push_back({std::string(key), std::to_string(value), true});
    return *this;
  }

  template <typename T>
  LogStream& operator<<(const T& v) {
    os_ << v;
    return *this;
  }

 private:
  LogLevel level_;
  std::string_view logger_;  // a string literal or otherwise outlives the statement
  std::ostringstream os_;
  std::vector<LogField> fields_;
};

// Turns a whole `LogStream(...) << ...` expression into void, so HR_LOG can
// be one conditional expression (no dangling `else` inside a caller's if).
struct LogVoidify {
  void operator&(const LogStream&) const {}
};

}  // namespace headrace

// HR_LOG(kInfo) << ...; the arguments are not evaluated when the level is off.
#define HR_LOG(level) HR_LOG_TO(level, "headrace")
// The same with a named logger ("headrace.topic", "headrace.group", ...).
#define HR_LOG_TO(level, logger)                                 \
  !::headrace::LogEnabled(::headrace::LogLevel::level)           \
      ? (void)0                                                  \
      : ::headrace::LogVoidify() & ::headrace::LogStream(::headrace::LogLevel::level, logger)
