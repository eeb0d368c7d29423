// A FileEnv for tests that fails chosen calls and passes the rest to another
// FileEnv (usually FileEnv::Default()).
//
// A rule selects calls by kind (FileOp) and, optionally, by a substring of
// the path; it lets the first `after` matching calls through and fails the
// next one (`once`) or every one from then on. A failed call returns
// Status::FromErrno(..., err) without reaching the OS, except a short write:
// the first half of the bytes is written, then the error is returned (what
// a disk filling up mid-write does). Matching calls are counted per rule
// from the moment it is added.
//
// Test-only hook: the broker reads HEADRACE_FAULT_INJECT once at start
// (docs/configuration.md) and parses it with ParseFaultRules.
//
// Thread-safety: all methods are thread-safe (one mutex around the rules;
// it is never held across a call to the wrapped env).
#pragma once

#include <cerrno>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/file_env.h"

namespace headrace {

struct FaultRule {
  FileOp op = FileOp::kWrite;
  std::string path_substr;   // "" = any path
  int64_t after = 0;         // matching calls let through before the first failure
  bool once = false;         // fail one call only; otherwise every one from then on
  int err = EIO;             // EIO, ENOSPC, EDQUOT, ...
  bool short_write = false;  // kWrite only: write half, then fail with `err`
  // Not "" : instead of failing, a selected call waits while this file
  // exists, then goes through (a test holds e.g. the flusher's fsyncs).
  std::string hold_path;
};

// Parses "op[:path=SUBSTR][:after=N][:errno=EIO|ENOSPC|EDQUOT|<number>][:once][:short]
// [:hold=FILE]",
// several separated by ','. Example: "fsync:path=.log:after=3:errno=EIO".
// Errors: InvalidArgument naming the bad part.
Result<std::vector<FaultRule>> ParseFaultRules(std::string_view spec);
// The spec text of one rule (for logs).
std::string FaultRuleToString(const FaultRule& rule);

class FaultInjectingEnv final : public FileEnv {
 public:
  // `target` must outlive this object.
  explicit FaultInjectingEnv(FileEnv* target) : target_(target) {}

  void AddRule(FaultRule rule);
  // Removes every rule: the env is healthy again.
  void ClearRules();
  // Calls failed so far, over all rules.
  int64_t injected() const;

  Result<int> Open(const std::string& path, int flags, int mode = 0644) override;
  void Close(int fd) override { target_->Close(fd); }
  Result<int64_t> ReadAt(int fd, const std::string& path, void* buf, int64_t n,
                         int64_t offset) override;
  Status WriteAt(int fd, const std::string& path, const void* data, int64_t n, int64_t offset,
                 WriteCache cache = WriteCache::kKeep) override;
  Status Sync(int fd, const std::string& path, bool data_only) override;
  Status SyncDir(const std::string& dir) override;
  Status Truncate(int fd, const std::string& path, int64_t size) override;
  Status TruncatePath(const std::string& path, int64_t size) override;
  Status AllocatePath(const std::string& path, int64_t offset, int64_t len) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Status Unlink(const std::string& path) override;
  Status CreateDirs(const std::string& dir) override;
  Result<std::vector<std::string>> ListDir(const std::string& dir) override;
  Result<FileStat> Stat(int fd, const std::string& path) override;
  Result<FileStat> StatPath(const std::string& path) override;
  Result<uint8_t*> Map(int fd, const std::string& path, int64_t len) override;
  void Unmap(uint8_t* addr, int64_t len) override { target_->Unmap(addr, len); }
  Status SyncMapped(uint8_t* addr, int64_t len, const std::string& path) override;

 private:
  struct Armed {
    FaultRule rule;
    int64_t seen = 0;  // matching calls so far
  };
  // The rule that fails this call, if any (counts the call for every rule
  // it matches).
  std::optional<FaultRule> Match(FileOp op, const std::string& path);
  static Status Injected(FileOp op, const std::string& path, int err);
  // The injected error if a rule fails this call, else call() on the target.
  template <typename Call>
  auto Pass(FileOp op, const std::string& path, Call call) -> decltype(call()) {
    if (std::optional<FaultRule> f = Match(op, path)) {
      if (f->hold_path.empty()) return Injected(op, path, f->err);
      WaitWhileExists(f->hold_path);
    }
    return call();
  }
  // Polls every 5 ms while `path` exists (FaultRule::hold_path).
  void WaitWhileExists(const std::string& path);

  FileEnv* const target_;
  mutable std::mutex mu_;  // guards rules_ and injected_
  std::vector<Armed> rules_;
  int64_t injected_ = 0;
};

}  // namespace headrace
