#include "broker/storage/data_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "common/file_env.h"

namespace headrace::broker {
namespace {

constexpr const char* kLockFileName = ".lock";

// The pid the holder wrote, or "" if it is unreadable.
std::string HolderPid(const std::string& path) {
  auto text = ReadWholeFile(*FileEnv::Default(), path);
  if (!text.ok()) return "";
  std::string pid = text.value().substr(0, text.value().find('\n'));
  if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) return "";
  return pid;
}

}  // namespace

Result<std::unique_ptr<DataDirLock>> DataDirLock::Acquire(const std::string& data_dir,
                                                          FileEnv& env) {
  std::error_code ec;
  std::filesystem::create_directories(data_dir, ec);
  if (ec) return Status::IOError("create " + data_dir + ": " + ec.message());
  std::string path = data_dir + "/" + kLockFileName;
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno("open " + path, errno);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    ::close(fd);
    if (err != EWOULDBLOCK) return Status::FromErrno("lock " + path, err);
    std::string pid = HolderPid(path);
    return Status::IOError("data directory " + data_dir + " is in use by another broker (" +
                           (pid.empty() ? std::string("pid unknown") : "pid " + pid) +
                           ", lock file " + path + ")");
  }
  std::string pid = std::to_string(::getpid()) + "\n";
  // The pid makes the refusal message of another broker more useful; writing
  // and fdatasyncing it also proves the directory's disk takes writes (a
  // failed or read-only disk is refused here, before anything is opened on
  // it).
  Status st = env.Truncate(fd, path, 0);
  if (st.ok()) st = env.WriteAt(fd, path, pid.data(), static_cast<int64_t>(pid.size()), 0);
  if (st.ok()) st = env.Sync(fd, path, /*data_only=*/true);
  if (!st.ok()) {
    ::close(fd);
    return Status::IOError("data directory " + data_dir + " is not writable: " + st.message());
  }
  return std::unique_ptr<DataDirLock>(new DataDirLock(fd, std::move(path)));
}

DataDirLock::~DataDirLock() { ::close(fd_); }

}  // namespace headrace::broker
