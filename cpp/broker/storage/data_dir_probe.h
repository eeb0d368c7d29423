// The readiness check of a data directory (/readyz, docs/metrics.md):
// whether it takes a small write and fsync right now. A read-only remount,
// a full disk or a failed device shows here before a produce meets it.
#pragma once

#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "common/file_env.h"
#include "headrace/status.h"

namespace headrace::broker {

// Writes, fsyncs and removes `dir`/.headrace-ready-probe through `env`.
// Errors: the failing call's IOError (naming the file).
Status ProbeDataDir(FileEnv& env, const std::string& dir);

// ProbeDataDir over several directories with the answer kept for
// `max_age`, so a scraper polling /readyz costs at most one probe per
// directory per interval. Thread-safe (one mutex, never on the data path).
class CachedDataDirProbe {
 public:
  explicit CachedDataDirProbe(std::chrono::milliseconds max_age = std::chrono::seconds(1))
      : max_age_(max_age) {}
  // "" when every directory passed, else "data directory D is not writable: why".
  std::string Problem(FileEnv& env, const std::vector<std::string>& dirs);

 private:
  const std::chrono::milliseconds max_age_;
  std::mutex mu_;  // guards below
  std::chrono::steady_clock::time_point checked_at_{};
  bool checked_ = false;
  std::string problem_;
};

}  // namespace headrace::broker
