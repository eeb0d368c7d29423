#include "broker/storage/data_dir_probe.h"

#include <fcntl.h>

namespace headrace::broker {

Status ProbeDataDir(FileEnv& env, const std::string& dir) {
  const std::string path = dir + "/.headrace-ready-probe";
  HR_ASSIGN_OR_RETURN(int fd, env.Open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC));
  static constexpr char kProbe[] = "headrace readiness probe\n";
  Status st = env.WriteAt(fd, path, kProbe, sizeof(kProbe) - 1, 0);
  if (st.ok()) st = env.Sync(fd, path, /*data_only=*/true);
  env.Close(fd);
  Status removed = env.Unlink(path);
  return st.ok() ? removed : st;
}

std::string CachedDataDirProbe::Problem(FileEnv& env, const std::vector<std::string>& dirs) {
  std::lock_guard<std::mutex> l(mu_);
  const auto now = std::chrono::steady_clock::now();
  if (checked_ && now - checked_at_ < max_age_) return problem_;
  problem_.clear();
  for (const std::string& dir : dirs) {
    Status st = ProbeDataDir(env, dir);
    if (!st.ok()) {
      problem_ = "data directory " + dir + " is not writable: " + st.ToString();
      break;
    }
  }
  checked_ = true;
  checked_at_ = std::chrono::steady_clock::now();
  return problem_;
}

}  // namespace headrace::broker
