// TestFile: an unlinked temporary file holding given bytes, for tests of
// code that reads or sends FileSlices. Test-only.
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "common/file_slice.h"
#include "headrace/types.h"

namespace headrace::testing {

class TestFile {
 public:
  // The file lives in /tmp (a disk file system here, so Evict() works;
  // on tmpfs pages cannot be evicted).
  explicit TestFile(const std::string& content) {
    char path[] = "/tmp/headrace_test_file_XXXXXX";
    fd_ = ::mkstemp(path);
    ::unlink(path);
    for (size_t at = 0; fd_ >= 0 && at < content.size();) {
      ssize_t n = ::write(fd_, content.data() + at, content.size() - at);
      if (n <= 0) break;
      at += static_cast<size_t>(n);
    }
  }
  ~TestFile() { ::close(fd_); }
  TestFile(const TestFile&) = delete;
  TestFile& operator=(const TestFile&) = delete;

  int fd() const { return fd_; }
  FileSlice Slice(int64_t pos, int64_t len) const {
    return {.fd = fd_, .position = FilePosition(pos), .length = len, .keepalive = nullptr};
  }
  // Writes the file back and drops its pages from the page cache. False when
  // some stay cached (file system or kernel without the means).
  bool Evict() {
    ::fdatasync(fd_);
    ::posix_fadvise(fd_, 0, 0, POSIX_FADV_DONTNEED);
    off_t size = ::lseek(fd_, 0, SEEK_END);
    for (off_t pos = 0; pos < size; pos += 4096) {
      if (RangeCached(fd_, pos, 1)) return false;
    }
    return size > 0;
  }

 private:
  int fd_ = -1;
};

}  // namespace headrace::testing
