#include "broker/hw_checkpoint.h"

#include <sstream>

#include "broker/log_dirs.h"
#include "broker/partition.h"

namespace headrace::broker {
namespace {

constexpr int kFormatVersion = 0;

Status Garbled(const std::string& path, const std::string& why) {
  return Status::Corruption(path + ": " + why);
}

}  // namespace

std::string FormatHwCheckpoint(const HwCheckpoint& entries) {
  std::string text = std::to_string(kFormatVersion) + "\n" + std::to_string(entries.size()) + "\n";
  for (const auto& [tp, hw] : entries) {
    text += tp.first + " " + std::to_string(tp.second) + " " + std::to_string(hw.value()) + "\n";
  }
  return text;
}

Result<HwCheckpoint> ParseHwCheckpoint(std::string_view text, const std::string& path) {
  std::istringstream in{std::string(text)};
  int64_t version = -1, count = -1;
  if (!(in >> version) || version != kFormatVersion) return Garbled(path, "unknown version");
  if (!(in >> count) || count < 0 || count > (1 << 24)) return Garbled(path, "bad entry count");
  HwCheckpoint entries;
  for (int64_t i = 0; i < count; ++i) {
    std::string topic;
    int64_t partition = -1, hw = -1;
    if (!(in >> topic >> partition >> hw)) {
      return Garbled(path, "entry " + std::to_string(i) + " missing");
    }
    if (partition < 0 || partition > INT32_MAX || hw < 0) {
      return Garbled(path, "entry " + std::to_string(i) + " out of range");
    }
    entries[{topic, static_cast<int32_t>(partition)}] = Offset(hw);
  }
  std::string extra;
  if (in >> extra) return Garbled(path, "trailing data");
  return entries;
}

Result<HwCheckpoint> ReadHwCheckpoint(FileEnv& env, const std::string& dir) {
  const std::string path = dir + "/" + kHwCheckpointName;
  Result<std::string> text = ReadWholeFile(env, path);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) return HwCheckpoint{};
    return text.status();
  }
  return ParseHwCheckpoint(*text, path);
}

Status WriteHwCheckpoint(FileEnv& env, const std::string& dir, const HwCheckpoint& entries) {
  return WriteFileAtomically(env, dir, kHwCheckpointName, FormatHwCheckpoint(entries));
}

Status CheckpointHighWatermarks(LogDirs& dirs,
                                const std::vector<std::shared_ptr<Partition>>& partitions) {
  std::vector<HwCheckpoint> per_dir(dirs.size());
  for (const auto& p : partitions) {
    if (p->offline()) continue;
    int d = dirs.IndexOf(p->dir());
    if (d < 0) continue;
    per_dir[d][{p->topic(), p->partition()}] = p->high_watermark();
  }
  Status first;
  for (int d = 0; d < dirs.size(); ++d) {
    if (!dirs.online(d)) continue;
    Status st = WriteHwCheckpoint(dirs.env(), dirs.path(d), per_dir[d]);
    if (!st.ok() && first.ok()) first = st;
  }
  return first;
}

}  // namespace headrace::broker
