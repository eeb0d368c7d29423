#include "broker/storage/hw_checkpoint.h"

#include "broker/base/checkpoint_text.h"
#include "broker/storage/log_dirs.h"
#include "broker/partition/partition.h"

namespace headrace::broker {

std::string FormatHwCheckpoint(const HwCheckpoint& entries) {
  std::vector<std::string> lines;
  lines.reserve(entries.size());
  for (const auto& [tp, hw] : entries) {
    lines.push_back(tp.first + " " + std::to_string(tp.second) + " " + std::to_string(hw.value()));
  }
  return FormatCheckpointText(lines);
}

Result<HwCheckpoint> ParseHwCheckpoint(std::string_view text, const std::string& path) {
  HwCheckpoint entries;
  HR_RETURN_IF_ERROR(ParseCheckpointText(text, path, [&](std::istream& in) -> std::string {
    std::string topic;
    int64_t partition = -1, hw = -1;
    if (!(in >> topic >> partition >> hw)) return "missing";
    if (partition < 0 || partition > INT32_MAX || hw < 0) return "out of range";
    entries[{topic, static_cast<int32_t>(partition)}] = Offset(hw);
    return "";
  }));
  return entries;
}

Result<HwCheckpoint> ReadHwCheckpoint(FileEnv& env, const std::string& dir) {
  const std::string path = dir + "/" + kHwCheckpointName;
  HR_ASSIGN_OR_RETURN(std::optional<std::string> text, ReadFileIfExists(env, path));
  if (!text) return HwCheckpoint{};
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
