#include "common/logging.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <strings.h>

#include "common/json_escape.h"

namespace headrace {
namespace {

int LevelFromEnv() {
  const char* v = std::getenv("HEADRACE_LOG_LEVEL");
  if (v == nullptr) return static_cast<int>(LogLevel::kInfo);
  if (strcasecmp(v, "debug") == 0) return static_cast<int>(LogLevel::kDebug);
  if (strcasecmp(v, "warn") == 0) return static_cast<int>(LogLevel::kWarn);
  if (strcasecmp(v, "error") == 0) return static_cast<int>(LogLevel::kError);
  return static_cast<int>(LogLevel::kInfo);
}

int FormatFromEnv() {
  const char* v = std::getenv("HEADRACE_LOG_FORMAT");
  LogFormat f = LogFormat::kText;
  if (v != nullptr) ParseLogFormat(v, &f);
  return static_cast<int>(f);
}

std::atomic<int>& MinLevel() {
  static std::atomic<int> level{LevelFromEnv()};
  return level;
}

std::atomic<int>& Format() {
  static std::atomic<int> format{FormatFromEnv()};
  return format;
}

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "DEBUG";
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kWarn: return "WARN";
    case LogLevel::kError: return "ERROR";
  }
  return "?";
}

bool Reserved(std::string_view key) {
  return key == "ts" || key == "level" || key == "logger" || key == "msg";
}

}  // namespace

void SetLogLevel(LogLevel level) { MinLevel().store(static_cast<int>(level)); }

bool LogEnabled(LogLevel level) {
  return static_cast<int>(level) >= MinLevel().load(std::memory_order_relaxed);
}

void SetLogFormat(LogFormat format) { Format().store(static_cast<int>(format)); }

LogFormat GetLogFormat() {
  return static_cast<LogFormat>(Format().load(std::memory_order_relaxed));
}

bool ParseLogFormat(std::string_view name, LogFormat* out) {
  const std::string s(name);
  if (strcasecmp(s.c_str(), "text") == 0) {
    *out = LogFormat::kText;
    return true;
  }
  if (strcasecmp(s.c_str(), "json") == 0) {
    *out = LogFormat::kJson;
    return true;
  }
  return false;
}

std::string FormatLogLine(LogFormat format, const timespec& when, LogLevel level,
                          std::string_view logger, std::string_view message,
                          const std::vector<LogField>& fields) {
  tm utc{};
  gmtime_r(&when.tv_sec, &utc);
  char stamp[40];
  size_t n = strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &utc);
  snprintf(stamp + n, sizeof(stamp) - n, ".%03ldZ", when.tv_nsec / 1000000);
  std::string line;
  line.reserve(message.size() + 96);
  if (format == LogFormat::kText) {
    line.append(stamp).append(" ").append(LevelName(level)).append(" ");
    line.append(logger).append(": ");
    // One event, one line: a message's own line breaks are written as \n.
    for (char c : message) {
      if (c == '\n') {
        line.append("\\n");
      } else if (c == '\r') {
        line.append("\\r");
      } else {
        line.push_back(c);
      }
    }
    line.push_back('\n');
    return line;
  }
  line.append("{\"ts\":\"").append(stamp).append("\",\"level\":\"").append(LevelName(level));
  line.append("\",\"logger\":");
  AppendJsonString(&line, logger);
  line.append(",\"msg\":");
  AppendJsonString(&line, message);
  for (const LogField& f : fields) {
    if (Reserved(f.key)) continue;
    line.push_back(',');
    AppendJsonString(&line, f.key);
    line.push_back(':');
    if (f.literal) {
      line.append(f.value);
    } else {
      AppendJsonString(&line, f.value);
    }
  }
  line.append("}\n");
  return line;
}

void LogMessage(LogLevel level, std::string_view message) {
  LogMessage(level, "headrace", message, {});
}

void LogMessage(LogLevel level, std::string_view logger, std::string_view message,
                const std::vector<LogField>& fields) {
  if (!LogEnabled(level)) return;
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  const std::string line = FormatLogLine(GetLogFormat(), ts, level, logger, message, fields);
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t w = ::write(STDERR_FILENO, p, left);
    if (w <= 0) return;  // stderr closed or full: drop the line
    p += w;
    left -= static_cast<size_t>(w);
  }
}

}  // namespace headrace
