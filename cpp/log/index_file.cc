#include "log/index_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace headrace {
namespace {

constexpr int64_t kGrowStep = 64 * 1024;  // growth when not preallocated

int64_t PageSize() {
  static const int64_t p = sysconf(_SC_PAGESIZE);
  return p;
}

}  // namespace

Result<std::unique_ptr<IndexFile>> IndexFile::Open(FileEnv* env, const std::string& path,
                                                   int entry_size, int64_t max_bytes) {
  std::unique_ptr<IndexFile> f(new IndexFile());
  f->env_ = env;
  f->path_ = path;
  f->entry_size_ = entry_size;
  HR_ASSIGN_OR_RETURN(int fd, env->Open(path, O_RDWR | O_CREAT));
  Status st = f->MapFile(fd, max_bytes);
  env->Close(fd);  // the shared mapping keeps the file; no fd is held for life
  HR_RETURN_IF_ERROR(st);
  return f;
}

Status IndexFile::MapFile(int fd, int64_t max_bytes) {
  HR_ASSIGN_OR_RETURN(FileStat st, env_->Stat(fd, path_));
  file_bytes_ = st.size;
  size_was_exact_ = st.size % entry_size_ == 0;
  int64_t want = std::max<int64_t>({max_bytes, st.size, entry_size_});
  want = (want / entry_size_) * entry_size_;
  capacity_ = want / entry_size_;
  mapped_bytes_ = (want + PageSize() - 1) / PageSize() * PageSize();
  HR_ASSIGN_OR_RETURN(base_, env_->Map(fd, path_, mapped_bytes_));
  entries_.store(st.size / entry_size_, std::memory_order_release);
  return Status::OK();
}

IndexFile::~IndexFile() {
  if (base_ != nullptr) env_->Unmap(base_, mapped_bytes_);
}

Status IndexFile::ResizeFile(int64_t bytes) {
  if (bytes == file_bytes_) return Status::OK();
  // By path: the file's fd was closed after mapping (see Open).
  HR_RETURN_IF_ERROR(env_->TruncatePath(path_, bytes));
  file_bytes_ = bytes;
  allocated_bytes_ = std::min(allocated_bytes_, bytes);  // a shrink frees the blocks past it
  return Status::OK();
}

Status IndexFile::Append(const uint8_t* e) {
  int64_t n = entries_.load(std::memory_order_relaxed);
  if (n >= capacity_) return Status::TooLarge("index full: " + path_);
  const int64_t end = (n + 1) * entry_size_;
  // Where growth and block reservation go to: the next step, within capacity
  // (>= end, as n < capacity_).
  const int64_t ahead =
      std::min<int64_t>(capacity_ * entry_size_, (end + kGrowStep - 1) / kGrowStep * kGrowStep);
  if (end > file_bytes_) HR_RETURN_IF_ERROR(ResizeFile(ahead));
  if (end > allocated_bytes_) {
    // The file grows sparse (ftruncate): the store below would fault on a
    // hole, and on a full disk that fault is SIGBUS. Reserve the blocks
    // first, a step at a time, so that a full disk is this error instead.
    const int64_t from = n * entry_size_ / PageSize() * PageSize();
    HR_RETURN_IF_ERROR(env_->AllocatePath(path_, from, ahead - from));
    allocated_bytes_ = ahead;
  }
  std::memcpy(base_ + n * entry_size_, e, entry_size_);
  entries_.store(n + 1, std::memory_order_release);
  return Status::OK();
}

void IndexFile::TruncateEntries(int64_t n) {
  if (n < entries_.load(std::memory_order_relaxed)) entries_.store(n, std::memory_order_release);
}

Status IndexFile::Preallocate() { return ResizeFile(capacity_ * entry_size_); }

Status IndexFile::Trim() { return ResizeFile(entries() * entry_size_); }

Status IndexFile::Sync() {
  // msync(MS_SYNC) of a shared file mapping is fdatasync of that range of the
  // file (vfs_fsync_range): the entries and the file size become durable.
  // At least one page is synced so that a size change alone is made durable.
  int64_t used = entries() * entry_size_;
  int64_t len = (std::max<int64_t>(used, 1) + PageSize() - 1) / PageSize() * PageSize();
  return env_->SyncMapped(base_, std::min(len, mapped_bytes_), path_);
}

Status IndexFile::RenameTo(const std::string& new_path) {
  HR_RETURN_IF_ERROR(env_->Rename(path_, new_path));
  path_ = new_path;
  return Status::OK();
}

}  // namespace headrace
