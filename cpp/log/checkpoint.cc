#include "log/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "common/crc32c.h"
#include "log/filename.h"

namespace headrace {
namespace {

constexpr const char* kHeader = "headrace-log-checkpoint v1\n";

std::string Body(const Checkpoint& c) {
  char buf[512];
  std::snprintf(buf, sizeof(buf),
                "%slog_start_offset %" PRId64 "\nrecovery_offset %" PRId64
                "\nrecovery_segment %" PRId64 "\nrecovery_position %" PRId64
                "\nclean_shutdown %d\n",
                kHeader, c.log_start_offset.value(), c.recovery_offset.value(),
                c.recovery_segment.value(), c.recovery_position, c.clean_shutdown ? 1 : 0);
  return buf;
}

Status WriteAll(int fd, const std::string& s, const std::string& path) {
  size_t done = 0;
  while (done < s.size()) {
    ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno("write " + path, errno);
    done += n;
  }
  return Status::OK();
}

}  // namespace

Status SyncDirectory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno("open " + dir, errno);
  int rc = fsync(fd);
  int err = errno;
  ::close(fd);
  return rc == 0 ? Status::OK() : Status::FromErrno("fsync " + dir, err);
}

Status WriteCheckpoint(const std::string& dir, const Checkpoint& c, bool sync) {
  std::string body = Body(c);
  char crc[32];
  std::snprintf(crc, sizeof(crc), "crc32c %u\n", crc32c::Value(body.data(), body.size()));
  body += crc;
  std::string tmp = filename::CheckpointTempPath(dir);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno("open " + tmp, errno);
  Status st = WriteAll(fd, body, tmp);
  if (st.ok() && sync && fsync(fd) != 0) st = Status::FromErrno("fsync " + tmp, errno);
  ::close(fd);
  HR_RETURN_IF_ERROR(st);
  std::string path = filename::CheckpointPath(dir);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return Status::FromErrno("rename " + tmp, errno);
  return sync ? SyncDirectory(dir) : Status::OK();
}

Result<std::optional<Checkpoint>> ReadCheckpoint(const std::string& dir) {
  std::string path = filename::CheckpointPath(dir);
  FILE* f = std::fopen(path.c_str(), "re");
  if (f == nullptr) {
    if (errno == ENOENT) return std::optional<Checkpoint>();
    return Status::FromErrno("open " + path, errno);
  }
  char buf[1024];
  size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  Checkpoint c;
  int64_t start, rec, seg, pos;
  int clean;
  unsigned crc;
  int used = 0;
  if (std::sscanf(buf,
                  "headrace-log-checkpoint v1\nlog_start_offset %" SCNd64
                  "\nrecovery_offset %" SCNd64 "\nrecovery_segment %" SCNd64
                  "\nrecovery_position %" SCNd64 "\nclean_shutdown %d\n%n",
                  &start, &rec, &seg, &pos, &clean, &used) != 5 ||
      used == 0 || std::sscanf(buf + used, "crc32c %u", &crc) != 1)
    return Status::Corruption(path + ": unreadable");
  if (crc32c::Value(buf, used) != crc) return Status::Corruption(path + ": CRC mismatch");
  c.log_start_offset = Offset(start);
  c.recovery_offset = Offset(rec);
  c.recovery_segment = Offset(seg);
  c.recovery_position = pos;
  c.clean_shutdown = clean != 0;
  return std::optional<Checkpoint>(c);
}

}  // namespace headrace
