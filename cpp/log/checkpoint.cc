#include "log/checkpoint.h"

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

}  // namespace

Status WriteCheckpoint(FileEnv& env, const std::string& dir, const Checkpoint& c, bool sync) {
  std::string body = Body(c);
  char crc[32];
  std::snprintf(crc, sizeof(crc), "crc32c %u\n", crc32c::Value(body.data(), body.size()));
  body += crc;
  return WriteFileAtomically(env, dir, std::string(filename::kCheckpointName), body, sync);
}

Result<std::optional<Checkpoint>> ReadCheckpoint(FileEnv& env, const std::string& dir) {
  std::string path = filename::CheckpointPath(dir);
  Result<std::string> text = ReadWholeFile(env, path);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) return std::optional<Checkpoint>();
    return text.status();
  }
  const char* buf = text->c_str();
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
