#include "broker/base/checkpoint_text.h"

#include <sstream>

namespace headrace::broker {
namespace {

constexpr int kFormatVersion = 0;
constexpr int64_t kMaxEntries = int64_t{1} << 24;

Status Garbled(const std::string& path, const std::string& why) {
  return Status::Corruption(path + ": " + why);
}

}  // namespace

std::string FormatCheckpointText(const std::vector<std::string>& lines) {
  std::string text = std::to_string(kFormatVersion) + "\n" + std::to_string(lines.size()) + "\n";
  for (const std::string& line : lines) text.append(line).append("\n");
  return text;
}

Status ParseCheckpointText(std::string_view text, const std::string& path,
                           const std::function<std::string(std::istream& in)>& read_entry) {
  std::istringstream in{std::string(text)};
  int64_t version = -1, count = -1;
  if (!(in >> version) || version != kFormatVersion) return Garbled(path, "unknown version");
  if (!(in >> count) || count < 0 || count > kMaxEntries) return Garbled(path, "bad entry count");
  for (int64_t i = 0; i < count; ++i) {
    std::string why = read_entry(in);
    if (!why.empty()) return Garbled(path, "entry " + std::to_string(i) + " " + why);
  }
  std::string extra;
  if (in >> extra) return Garbled(path, "trailing data");
  return Status::OK();
}

}  // namespace headrace::broker
