#include "common/file_env.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <iterator>
#include <filesystem>

namespace headrace {
namespace {

// Indexed by FileOp.
constexpr const char* kOpNames[] = {"open",   "read",   "write", "fsync", "msync",
                                    "mmap",   "truncate", "rename", "unlink", "mkdir",
                                    "list",   "stat",   "fallocate"};
static_assert(std::size(kOpNames) == kFileOpCount &&
              static_cast<int>(FileOp::kAllocate) + 1 == kFileOpCount);

// Linux 6.14's flag; older C library headers lack it (a kernel that does not
// know it answers EOPNOTSUPP).
#ifndef RWF_DONTCACHE
#define RWF_DONTCACHE 0x00000080
#endif

// One pwrite, or pwritev2(RWF_DONTCACHE) for WriteCache::kDrop, falling back
// to pwrite where that is unsupported.
ssize_t WriteOnce(int fd, const char* data, size_t n, off_t offset, WriteCache cache) {
  if (cache == WriteCache::kDrop) {
    struct iovec iov = {const_cast<char*>(data), n};
    ssize_t w = ::pwritev2(fd, &iov, 1, offset, RWF_DONTCACHE);
    if (w >= 0 || errno != EOPNOTSUPP) return w;
  }
  return ::pwrite(fd, data, n, offset);
}

FileStat ToFileStat(const struct stat& st) {
  return {static_cast<int64_t>(st.st_size),
          static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000};
}

// The OS. Stateless, so one instance serves every thread.
class PosixFileEnv final : public FileEnv {
 public:
  Result<int> Open(const std::string& path, int flags, int mode = 0644) override {
    int fd;
    do {
      fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
    } while (fd < 0 && errno == EINTR);
    if (fd >= 0) return fd;
    if (errno == ENOENT) return Status::NotFound(path + " does not exist");
    if (errno == EEXIST) return Status::AlreadyExists(path);
    return Status::FromErrno("open " + path, errno);
  }

  void Close(int fd) override { ::close(fd); }

  Result<int64_t> ReadAt(int fd, const std::string& path, void* buf, int64_t n,
                         int64_t offset) override {
    int64_t got = 0;
    while (got < n) {
      ssize_t r = ::pread(fd, static_cast<char*>(buf) + got, n - got, offset + got);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return Status::FromErrno("pread " + path, errno);
      if (r == 0) break;
      got += r;
    }
    return got;
  }

  Status WriteAt(int fd, const std::string& path, const void* data, int64_t n, int64_t offset,
                 WriteCache cache = WriteCache::kKeep) override {
    int64_t done = 0;
    while (done < n) {
      ssize_t w = WriteOnce(fd, static_cast<const char*>(data) + done, n - done, offset + done,
                            cache);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return Status::FromErrno("write " + path, errno);
      if (w == 0) return Status::FromErrno("write " + path, EIO);
      done += w;
    }
    return Status::OK();
  }

  Status Sync(int fd, const std::string& path, bool data_only) override {
    int rc = data_only ? ::fdatasync(fd) : ::fsync(fd);
    if (rc == 0) return Status::OK();
    return Status::FromErrno((data_only ? "fdatasync " : "fsync ") + path, errno);
  }

  Status SyncDir(const std::string& dir) override {
    HR_ASSIGN_OR_RETURN(int fd, Open(dir, O_RDONLY | O_DIRECTORY, 0));
    Status st = Sync(fd, dir, /*data_only=*/false);
    Close(fd);
    return st;
  }

  Status Truncate(int fd, const std::string& path, int64_t size) override {
    if (::ftruncate(fd, size) == 0) return Status::OK();
    return Status::FromErrno("ftruncate " + path, errno);
  }

  Status TruncatePath(const std::string& path, int64_t size) override {
    if (::truncate(path.c_str(), size) == 0) return Status::OK();
    return Status::FromErrno("truncate " + path, errno);
  }

  Status AllocatePath(const std::string& path, int64_t offset, int64_t len) override {
    HR_ASSIGN_OR_RETURN(int fd, Open(path, O_WRONLY));
    int rc;
    do {
      rc = ::fallocate(fd, FALLOC_FL_KEEP_SIZE, offset, len);
    } while (rc != 0 && errno == EINTR);
    const int err = rc == 0 ? 0 : errno;
    Close(fd);
    if (rc == 0 || err == EOPNOTSUPP) return Status::OK();
    return Status::FromErrno("fallocate " + path, err);
  }

  Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) == 0) return Status::OK();
    return Status::FromErrno("rename " + from + " to " + to, errno);
  }

  Status Unlink(const std::string& path) override {
    if (::unlink(path.c_str()) == 0) return Status::OK();
    if (errno == ENOENT) return Status::NotFound(path + " does not exist");
    return Status::FromErrno("unlink " + path, errno);
  }

  Status CreateDirs(const std::string& dir) override {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return Status::FromErrno("mkdir " + dir, ec.value());
    return Status::OK();
  }

  Result<std::vector<std::string>> ListDir(const std::string& dir) override {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return Status::FromErrno("opendir " + dir, errno);
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d)) {
      std::string_view n = e->d_name;
      if (n != "." && n != "..") names.emplace_back(n);
    }
    ::closedir(d);
    return names;
  }

  Result<FileStat> Stat(int fd, const std::string& path) override {
    struct stat st;
    if (::fstat(fd, &st) != 0) return Status::FromErrno("fstat " + path, errno);
    return ToFileStat(st);
  }

  Result<FileStat> StatPath(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) == 0) return ToFileStat(st);
    if (errno == ENOENT) return Status::NotFound(path + " does not exist");
    return Status::FromErrno("stat " + path, errno);
  }

  Result<uint8_t*> Map(int fd, const std::string& path, int64_t len) override {
    void* m = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) return Status::FromErrno("mmap " + path, errno);
    // Index files are sparse past their entries: without this, every write
    // fault on a new page runs readahead over the holes.
    (void)::madvise(m, len, MADV_RANDOM);
    return static_cast<uint8_t*>(m);
  }

  void Unmap(uint8_t* addr, int64_t len) override { ::munmap(addr, len); }

  Status SyncMapped(uint8_t* addr, int64_t len, const std::string& path) override {
    if (::msync(addr, len, MS_SYNC) == 0) return Status::OK();
    return Status::FromErrno("msync " + path, errno);
  }
};

}  // namespace

const char* FileOpName(FileOp op) { return kOpNames[static_cast<int>(op)]; }

std::optional<FileOp> ParseFileOp(std::string_view name) {
  if (name == "pwrite") return FileOp::kWrite;
  if (name == "fdatasync") return FileOp::kSync;
  if (name == "ftruncate") return FileOp::kTruncate;
  for (int i = 0; i < kFileOpCount; ++i)
    if (name == kOpNames[i]) return static_cast<FileOp>(i);
  return std::nullopt;
}

FileEnv* FileEnv::Default() {
  static PosixFileEnv* const env = new PosixFileEnv();  // never destroyed: outlives every user
  return env;
}

Result<std::string> ReadWholeFile(FileEnv& env, const std::string& path) {
  HR_ASSIGN_OR_RETURN(int fd, env.Open(path, O_RDONLY));
  std::string out;
  Status st;
  for (;;) {
    size_t at = out.size();
    out.resize(at + 16384);
    Result<int64_t> n = env.ReadAt(fd, path, out.data() + at, 16384, static_cast<int64_t>(at));
    if (!n.ok()) st = n.status();
    out.resize(at + (n.ok() ? *n : 0));
    if (!n.ok() || *n < 16384) break;
  }
  env.Close(fd);
  HR_RETURN_IF_ERROR(st);
  return out;
}

Result<std::optional<std::string>> ReadFileIfExists(FileEnv& env, const std::string& path) {
  Result<std::string> text = ReadWholeFile(env, path);
  if (text.ok()) return std::optional<std::string>(std::move(text).value());
  if (text.status().code() == StatusCode::kNotFound) return std::optional<std::string>();
  return text.status();
}

Status WriteFileAtomically(FileEnv& env, const std::string& dir, const std::string& name,
                           std::string_view contents, bool sync) {
  std::string final_path = dir + "/" + name;
  std::string tmp = final_path + ".tmp";
  HR_ASSIGN_OR_RETURN(int fd, env.Open(tmp, O_WRONLY | O_CREAT | O_TRUNC));
  Status st = env.WriteAt(fd, tmp, contents.data(), static_cast<int64_t>(contents.size()), 0);
  if (st.ok() && sync) st = env.Sync(fd, tmp, /*data_only=*/false);
  env.Close(fd);
  HR_RETURN_IF_ERROR(st);
  HR_RETURN_IF_ERROR(env.Rename(tmp, final_path));
  return sync ? env.SyncDir(dir) : Status::OK();
}

}  // namespace headrace
