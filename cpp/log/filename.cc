#include "log/filename.h"

#include <cstdio>

namespace headrace::filename {
namespace {

constexpr int kDigits = 20;

const char* Extension(FileKind kind) {
  switch (kind) {
    case FileKind::kLog: return ".log";
    case FileKind::kOffsetIndex: return ".index";
    case FileKind::kTimeIndex: return ".timeindex";
  }
  return "";
}

bool ParseKind(std::string_view ext, FileKind* kind) {
  for (FileKind k : {FileKind::kLog, FileKind::kOffsetIndex, FileKind::kTimeIndex}) {
    if (ext == Extension(k)) {
      *kind = k;
      return true;
    }
  }
  return false;
}

}  // namespace

std::string SegmentFileName(Offset base, FileKind kind) {
  char buf[kDigits + 1];
  std::snprintf(buf, sizeof(buf), "%020lld", static_cast<long long>(base.value()));
  return std::string(buf) + Extension(kind);
}

std::string SegmentPath(const std::string& dir, Offset base, FileKind kind) {
  return dir + "/" + SegmentFileName(base, kind);
}

std::string DeletedPath(const std::string& path) { return path + std::string(kDeletedSuffix); }

std::string CheckpointPath(const std::string& dir) {
  return dir + "/" + std::string(kCheckpointName);
}
std::string CheckpointTempPath(const std::string& dir) {
  return dir + "/" + std::string(kCheckpointTempName);
}

std::string OffsetFileName(Offset offset, std::string_view extension) {
  char buf[kDigits + 1];
  std::snprintf(buf, sizeof(buf), "%020lld", static_cast<long long>(offset.value()));
  return std::string(buf) + std::string(extension);
}

std::optional<Offset> ParseOffsetFileName(std::string_view name, std::string_view extension) {
  if (name.size() != kDigits + extension.size() || !name.ends_with(extension)) return std::nullopt;
  int64_t value = 0;
  for (int i = 0; i < kDigits; ++i) {
    char c = name[i];
    if (c < '0' || c > '9') return std::nullopt;
    if (value > (INT64_MAX - (c - '0')) / 10) return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return Offset(value);
}

std::optional<ParsedName> Parse(std::string_view name) {
  ParsedName p;
  if (name == kCheckpointName) {
    p.type = ParsedName::Type::kCheckpoint;
    return p;
  }
  if (name == kCheckpointTempName) {
    p.type = ParsedName::Type::kCheckpointTemp;
    return p;
  }
  if (name.ends_with(kDeletedSuffix)) {
    p.deleted = true;
    name.remove_suffix(kDeletedSuffix.size());
  }
  if (name.size() <= static_cast<size_t>(kDigits)) return std::nullopt;
  int64_t base = 0;
  for (int i = 0; i < kDigits; ++i) {
    char c = name[i];
    if (c < '0' || c > '9') return std::nullopt;
    if (base > (INT64_MAX - (c - '0')) / 10) return std::nullopt;
    base = base * 10 + (c - '0');
  }
  if (!ParseKind(name.substr(kDigits), &p.kind)) return std::nullopt;
  p.base = Offset(base);
  return p;
}

}  // namespace headrace::filename
