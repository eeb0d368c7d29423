// The I/O seam, as LevelDB's Env: every file operation of the log engine
// (segments, indexes and their mappings, the checkpoint, directory listing)
// and of the broker's own files (metadata store, producer id block) goes
// through a FileEnv, so that tests can make chosen calls fail
// (FaultInjectingEnv in common/fault_injecting_env.h). FileEnv::Default()
// calls the OS.
//
// Contract of every method: errors are values. A failed system call gives
// Status::FromErrno("<call> <path>", errno), so the message names the path
// and the errno and Status::sys_errno() carries it; except Open (NotFound
// for ENOENT, AlreadyExists for EEXIST) and Unlink (NotFound for ENOENT).
// EINTR is retried inside. Implementations are thread-safe.
// Cost: one virtual call per system call, never one per record.
//
// Lifetime: whoever passes a FileEnv* to a Log, a store or a broker keeps
// it alive until they are closed; FileEnv::Default() lives for the process.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "headrace/status.h"
#include "headrace/write_cache.h"

namespace headrace {

// The kinds of call, as fault injection selects them.
enum class FileOp : uint8_t {
  kOpen,      // open(2) of a file or directory
  kRead,      // pread(2)
  kWrite,     // pwrite(2) / write(2)
  kSync,      // fsync(2) / fdatasync(2), files and directories
  kMsync,     // msync(2) of an index mapping
  kMap,       // mmap(2)
  kTruncate,  // ftruncate(2) / truncate(2)
  kRename,    // rename(2)
  kUnlink,    // unlink(2)
  kMkdir,     // mkdir(2) (CreateDirs)
  kList,      // opendir(3)/readdir(3)
  kStat,      // fstat(2) / stat(2)
  kAllocate,  // fallocate(2)
};
inline constexpr int kFileOpCount = 13;

// "open", "read", "write", "fsync", "msync", "mmap", "truncate", "rename",
// "unlink", "mkdir", "list", "stat", "fallocate".
const char* FileOpName(FileOp op);
// The inverse of FileOpName; also accepts "pwrite", "fdatasync", "ftruncate".
std::optional<FileOp> ParseFileOp(std::string_view name);

struct FileStat {
  int64_t size = 0;
  int64_t mtime_ms = 0;
};

class FileEnv {
 public:
  virtual ~FileEnv() = default;
  // The OS. Never null; never destroyed.
  static FileEnv* Default();

  // open(2) with O_CLOEXEC added. Returns the fd.
  virtual Result<int> Open(const std::string& path, int flags, int mode = 0644) = 0;
  virtual void Close(int fd) = 0;
  // Reads up to n bytes at `offset`; fewer only at end of file. `path`
  // only names the file in errors (may be empty).
  virtual Result<int64_t> ReadAt(int fd, const std::string& path, void* buf, int64_t n,
                                 int64_t offset) = 0;
  // Writes all n bytes at `offset`. On error a prefix may be in the file.
  // Every override keeps this default.
  virtual Status WriteAt(int fd, const std::string& path, const void* data, int64_t n,
                         int64_t offset, WriteCache cache = WriteCache::kKeep) = 0;
  // fdatasync(2) when `data_only`, else fsync(2).
  virtual Status Sync(int fd, const std::string& path, bool data_only) = 0;
  // Opens `dir` and fsyncs it: makes creations and renames in it durable.
  virtual Status SyncDir(const std::string& dir) = 0;
  virtual Status Truncate(int fd, const std::string& path, int64_t size) = 0;
  virtual Status TruncatePath(const std::string& path, int64_t size) = 0;
  // Reserves disk blocks for [offset, offset + len) of `path` without
  // changing its size (fallocate FALLOC_FL_KEEP_SIZE), so that a later store
  // through a shared mapping cannot fault for want of space (SIGBUS): the
  // shortage is this call's error instead (ENOSPC). A file system without
  // fallocate reserves nothing and answers OK.
  virtual Status AllocatePath(const std::string& path, int64_t offset, int64_t len) = 0;
  virtual Status Rename(const std::string& from, const std::string& to) = 0;
  virtual Status Unlink(const std::string& path) = 0;
  // mkdir -p.
  virtual Status CreateDirs(const std::string& dir) = 0;
  // Names in `dir` (without "." and "..").
  virtual Result<std::vector<std::string>> ListDir(const std::string& dir) = 0;
  virtual Result<FileStat> Stat(int fd, const std::string& path) = 0;
  // Errors: NotFound when `path` does not exist.
  virtual Result<FileStat> StatPath(const std::string& path) = 0;
  // A shared read-write mapping of the first `len` bytes of `fd`, advised
  // for random access.
  virtual Result<uint8_t*> Map(int fd, const std::string& path, int64_t len) = 0;
  virtual void Unmap(uint8_t* addr, int64_t len) = 0;
  // msync(MS_SYNC) of [addr, addr + len): fdatasync of that file range.
  virtual Status SyncMapped(uint8_t* addr, int64_t len, const std::string& path) = 0;
};

// The whole file. Errors: NotFound if it does not exist, IOError otherwise.
Result<std::string> ReadWholeFile(FileEnv& env, const std::string& path);
// The whole file, or nullopt if it does not exist (a store's file before its
// first write). Errors: IOError.
Result<std::optional<std::string>> ReadFileIfExists(FileEnv& env, const std::string& path);

// Replaces <dir>/<name> with `contents` atomically: writes <dir>/<name>.tmp
// and renames it over <dir>/<name>. With `sync`, the temp file is fsynced
// before the rename and <dir> after it, so after a crash the file holds
// either the old or the new contents, and an OK return means the new ones
// are durable.
Status WriteFileAtomically(FileEnv& env, const std::string& dir, const std::string& name,
                           std::string_view contents, bool sync = true);

}  // namespace headrace
