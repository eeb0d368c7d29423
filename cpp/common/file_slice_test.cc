#include "common/file_slice.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>

namespace headrace {
namespace {

// A file on the build's file system (not tmpfs: its pages can be evicted).
class EvictableFile {
 public:
  explicit EvictableFile(const std::string& content) {
    char path[] = "file_slice_test_XXXXXX";
    fd_ = mkstemp(path);
    unlink(path);
    EXPECT_EQ(write(fd_, content.data(), content.size()), static_cast<ssize_t>(content.size()));
  }
  ~EvictableFile() { close(fd_); }
  // Drops the file's pages from the page cache; false if the kernel kept them.
  bool Evict() {
    fdatasync(fd_);
    posix_fadvise(fd_, 0, 0, POSIX_FADV_DONTNEED);
    return !RangeCached(fd_, 0, 1);
  }
  FileSlice Slice(int64_t pos, int64_t len) const {
    return {.fd = fd_, .position = FilePosition(pos), .length = len, .keepalive = nullptr};
  }
  int fd() const { return fd_; }

 private:
  int fd_;
};

TEST(FileSliceTest, ReadIfCachedCopiesCachedPagesAndRefusesToWaitForTheDisk) {
  std::string content(64 << 10, 'x');
  content[40000] = 'y';
  EvictableFile f(content);
  std::string out(1000, '\0');
  Result<bool> hot = ReadSliceIfCached(f.Slice(39500, 1000), reinterpret_cast<uint8_t*>(out.data()));
  ASSERT_TRUE(hot.ok());
  EXPECT_TRUE(*hot);
  EXPECT_EQ(out, content.substr(39500, 1000));
  EXPECT_TRUE(RangeCached(f.fd(), 0, static_cast<int64_t>(content.size())));
  if (!f.Evict()) GTEST_SKIP() << "pages not evictable here (or no cachestat)";
  Result<bool> cold = ReadSliceIfCached(f.Slice(39500, 1000), reinterpret_cast<uint8_t*>(out.data()));
  ASSERT_TRUE(cold.ok());
  EXPECT_FALSE(*cold);
  // A blocking read brings what it read back into the cache.
  std::string head(8192, '\0');
  ASSERT_TRUE(ReadSlice(f.Slice(0, 8192), reinterpret_cast<uint8_t*>(head.data())).ok());
  EXPECT_EQ(head, content.substr(0, 8192));
  EXPECT_TRUE(RangeCached(f.fd(), 0, 8192));
}

}  // namespace
}  // namespace headrace
