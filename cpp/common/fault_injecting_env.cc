#include "common/fault_injecting_env.h"

#include <charconv>
#include <chrono>
#include <thread>
#include <cstring>

namespace headrace {
namespace {

struct ErrnoName {
  const char* name;
  int err;
};
constexpr ErrnoName kErrnos[] = {{"EIO", EIO}, {"ENOSPC", ENOSPC}, {"EDQUOT", EDQUOT},
                                 {"EROFS", EROFS}, {"EMFILE", EMFILE}};

Result<int64_t> ParseInt(std::string_view text, std::string_view what) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || v < 0)
    return Status::InvalidArgument("fault rule: bad " + std::string(what) + " '" +
                                   std::string(text) + "'");
  return v;
}

Result<int> ParseErrno(std::string_view text) {
  for (const ErrnoName& e : kErrnos)
    if (text == e.name) return e.err;
  HR_ASSIGN_OR_RETURN(int64_t v, ParseInt(text, "errno"));
  return static_cast<int>(v);
}

// One "op:key=value:flag" rule.
Result<FaultRule> ParseRule(std::string_view spec) {
  FaultRule rule;
  size_t colon = spec.find(':');
  std::string_view op = spec.substr(0, colon);
  std::optional<FileOp> parsed = ParseFileOp(op);
  if (!parsed)
    return Status::InvalidArgument("fault rule: unknown operation '" + std::string(op) + "'");
  rule.op = *parsed;
  while (colon != std::string_view::npos) {
    spec.remove_prefix(colon + 1);
    colon = spec.find(':');
    std::string_view part = spec.substr(0, colon);
    size_t eq = part.find('=');
    std::string_view key = part.substr(0, eq);
    std::string_view value = eq == std::string_view::npos ? "" : part.substr(eq + 1);
    if (key == "path") {
      rule.path_substr = value;
    } else if (key == "after") {
      HR_ASSIGN_OR_RETURN(rule.after, ParseInt(value, "after"));
    } else if (key == "errno") {
      HR_ASSIGN_OR_RETURN(rule.err, ParseErrno(value));
    } else if (key == "hold" && !value.empty()) {
      rule.hold_path = value;
    } else if (part == "once") {
      rule.once = true;
    } else if (part == "short" && rule.op == FileOp::kWrite) {
      rule.short_write = true;
    } else {
      return Status::InvalidArgument("fault rule: unknown part '" + std::string(part) + "'");
    }
  }
  return rule;
}

}  // namespace

Result<std::vector<FaultRule>> ParseFaultRules(std::string_view spec) {
  std::vector<FaultRule> rules;
  while (!spec.empty()) {
    size_t comma = spec.find(',');
    HR_ASSIGN_OR_RETURN(FaultRule r, ParseRule(spec.substr(0, comma)));
    rules.push_back(std::move(r));
    spec.remove_prefix(comma == std::string_view::npos ? spec.size() : comma + 1);
  }
  if (rules.empty()) return Status::InvalidArgument("fault rule: empty");
  return rules;
}

std::string FaultRuleToString(const FaultRule& r) {
  const char* name = strerrorname_np(r.err);
  std::string s = FileOpName(r.op);
  if (!r.path_substr.empty()) s += ":path=" + r.path_substr;
  s += ":after=" + std::to_string(r.after);
  s += ":errno=" + (name != nullptr ? std::string(name) : std::to_string(r.err));
  if (r.once) s += ":once";
  if (r.short_write) s += ":short";
  if (!r.hold_path.empty()) s += ":hold=" + r.hold_path;
  return s;
}

void FaultInjectingEnv::AddRule(FaultRule rule) {
  std::lock_guard<std::mutex> l(mu_);
  rules_.push_back({std::move(rule), 0});
}

void FaultInjectingEnv::ClearRules() {
  std::lock_guard<std::mutex> l(mu_);
  rules_.clear();
}

int64_t FaultInjectingEnv::injected() const {
  std::lock_guard<std::mutex> l(mu_);
  return injected_;
}

std::optional<FaultRule> FaultInjectingEnv::Match(FileOp op, const std::string& path) {
  std::lock_guard<std::mutex> l(mu_);
  std::optional<FaultRule> hit;
  for (Armed& a : rules_) {
    if (a.rule.op != op || path.find(a.rule.path_substr) == std::string::npos) continue;
    int64_t n = a.seen++;
    bool fails = a.rule.once ? n == a.rule.after : n >= a.rule.after;
    if (fails && !hit) hit = a.rule;
  }
  if (hit) ++injected_;
  return hit;
}

void FaultInjectingEnv::WaitWhileExists(const std::string& path) {
  while (target_->StatPath(path).ok()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

Status FaultInjectingEnv::Injected(FileOp op, const std::string& path, int err) {
  return Status::FromErrno(std::string(FileOpName(op)) + " " + path, err);
}

Result<int> FaultInjectingEnv::Open(const std::string& path, int flags, int mode) {
  return Pass(FileOp::kOpen, path, [&] { return target_->Open(path, flags, mode); });
}

Result<int64_t> FaultInjectingEnv::ReadAt(int fd, const std::string& path, void* buf, int64_t n,
                                          int64_t offset) {
  return Pass(FileOp::kRead, path, [&] { return target_->ReadAt(fd, path, buf, n, offset); });
}

Status FaultInjectingEnv::WriteAt(int fd, const std::string& path, const void* data, int64_t n,
                                  int64_t offset, WriteCache cache) {
  std::optional<FaultRule> f = Match(FileOp::kWrite, path);
  if (f && !f->hold_path.empty()) WaitWhileExists(f->hold_path);
  if (!f || !f->hold_path.empty()) return target_->WriteAt(fd, path, data, n, offset, cache);
  if (f->short_write && n > 1) {
    HR_RETURN_IF_ERROR(target_->WriteAt(fd, path, data, n / 2, offset, cache));
  }
  return Injected(FileOp::kWrite, path, f->err);
}

Status FaultInjectingEnv::Sync(int fd, const std::string& path, bool data_only) {
  return Pass(FileOp::kSync, path, [&] { return target_->Sync(fd, path, data_only); });
}

Status FaultInjectingEnv::SyncDir(const std::string& dir) {
  return Pass(FileOp::kSync, dir, [&] { return target_->SyncDir(dir); });
}

Status FaultInjectingEnv::Truncate(int fd, const std::string& path, int64_t size) {
  return Pass(FileOp::kTruncate, path, [&] { return target_->Truncate(fd, path, size); });
}

Status FaultInjectingEnv::TruncatePath(const std::string& path, int64_t size) {
  return Pass(FileOp::kTruncate, path, [&] { return target_->TruncatePath(path, size); });
}

Status FaultInjectingEnv::AllocatePath(const std::string& path, int64_t offset, int64_t len) {
  return Pass(FileOp::kAllocate, path, [&] { return target_->AllocatePath(path, offset, len); });
}

Status FaultInjectingEnv::Rename(const std::string& from, const std::string& to) {
  return Pass(FileOp::kRename, from, [&] { return target_->Rename(from, to); });
}

Status FaultInjectingEnv::Unlink(const std::string& path) {
  return Pass(FileOp::kUnlink, path, [&] { return target_->Unlink(path); });
}

Status FaultInjectingEnv::CreateDirs(const std::string& dir) {
  return Pass(FileOp::kMkdir, dir, [&] { return target_->CreateDirs(dir); });
}

Result<std::vector<std::string>> FaultInjectingEnv::ListDir(const std::string& dir) {
  return Pass(FileOp::kList, dir, [&] { return target_->ListDir(dir); });
}

Result<FileStat> FaultInjectingEnv::Stat(int fd, const std::string& path) {
  return Pass(FileOp::kStat, path, [&] { return target_->Stat(fd, path); });
}

Result<FileStat> FaultInjectingEnv::StatPath(const std::string& path) {
  return Pass(FileOp::kStat, path, [&] { return target_->StatPath(path); });
}

Result<uint8_t*> FaultInjectingEnv::Map(int fd, const std::string& path, int64_t len) {
  return Pass(FileOp::kMap, path, [&] { return target_->Map(fd, path, len); });
}

Status FaultInjectingEnv::SyncMapped(uint8_t* addr, int64_t len, const std::string& path) {
  return Pass(FileOp::kMsync, path, [&] { return target_->SyncMapped(addr, len, path); });
}

}  // namespace headrace
