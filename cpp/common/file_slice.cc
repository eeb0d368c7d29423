#include "common/file_slice.h"

#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

namespace headrace {
namespace {

// cachestat(2) (Linux 6.5; the same number on every architecture), declared
// here because the C library headers may predate it.
constexpr long kSysCachestat = 451;
struct CachestatRange {
  uint64_t off;
  uint64_t len;
};
struct Cachestat {
  uint64_t nr_cache;
  uint64_t nr_dirty;
  uint64_t nr_writeback;
  uint64_t nr_evicted;
  uint64_t nr_recently_evicted;
};
std::atomic<bool> cachestat_missing{false};

// Reads s into dst with preadv2 `flags`: true when all of it was read, false
// when RWF_NOWAIT stopped at a page not in the page cache. (RWF_NOWAIT never
// waits for the disk, but it may start readahead of a missing page, and a
// read of it can then succeed if that I/O finished first: true does not
// prove the pages were cached before the call.)
Result<bool> ReadWithFlags(const FileSlice& s, uint8_t* dst, int flags) {
  int64_t done = 0;
  while (done < s.length) {
    iovec iov{dst + done, static_cast<size_t>(s.length - done)};
    ssize_t n = ::preadv2(s.fd, &iov, 1, static_cast<off_t>(s.position.value() + done), flags);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN && flags != 0) return false;
    if (n < 0) return Status::FromErrno("pread", errno);
    if (n == 0) return Status::Corruption("file ends inside a slice");
    done += n;
  }
  return true;
}

}  // namespace

Status ReadSlice(const FileSlice& s, uint8_t* dst) {
  Result<bool> r = ReadWithFlags(s, dst, 0);
  return r.ok() ? Status::OK() : r.status();
}

Status ReadSlices(std::span<const FileSlice> slices, uint8_t* dst) {
  for (const FileSlice& s : slices) {
    HR_RETURN_IF_ERROR(ReadSlice(s, dst));
    dst += s.length;
  }
  return Status::OK();
}

Result<bool> ReadSliceIfCached(const FileSlice& s, uint8_t* dst) {
  return ReadWithFlags(s, dst, RWF_NOWAIT);
}

bool RangeCached(int fd, int64_t pos, int64_t len) {
  if (len <= 0 || cachestat_missing.load(std::memory_order_relaxed)) return true;
  const int64_t page = ::sysconf(_SC_PAGESIZE);
  CachestatRange range{static_cast<uint64_t>(pos), static_cast<uint64_t>(len)};
  Cachestat st{};
  if (::syscall(kSysCachestat, fd, &range, &st, 0) != 0) {
    if (errno == ENOSYS) cachestat_missing.store(true, std::memory_order_relaxed);
    return true;  // cannot tell: send as before
  }
  const int64_t pages = (pos + len + page - 1) / page - pos / page;
  return static_cast<int64_t>(st.nr_cache) >= pages;
}

}  // namespace headrace
