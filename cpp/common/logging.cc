#include "common/logging.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <ctime>
#include <string>
#include <strings.h>

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

std::atomic<int>& MinLevel() {
  static std::atomic<int> level{LevelFromEnv()};
  return level;
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

}  // namespace

void SetLogLevel(LogLevel level) { MinLevel().store(static_cast<int>(level)); }

bool LogEnabled(LogLevel level) {
  return static_cast<int>(level) >= MinLevel().load(std::memory_order_relaxed);
}

void LogMessage(LogLevel level, std::string_view message) {
  if (!LogEnabled(level)) return;
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  tm utc{};
  gmtime_r(&ts.tv_sec, &utc);
  char stamp[40];
  size_t n = strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &utc);
  snprintf(stamp + n, sizeof(stamp) - n, ".%03ldZ", ts.tv_nsec / 1000000);
  std::string line;
  line.reserve(message.size() + 64);
  line.append(stamp).append(" ").append(LevelName(level)).append(" headrace: ");
  line.append(message).append("\n");
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
