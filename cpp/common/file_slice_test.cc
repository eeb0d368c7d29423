#include "common/file_slice.h"

#include <gtest/gtest.h>

#include <string>

#include "common/test_file.h"

namespace headrace {
namespace {

TEST(FileSliceTest, ReadIfCachedCopiesCachedPagesAndRefusesToWaitForTheDisk) {
  std::string content(64 << 10, 'x');
  content[40000] = 'y';
  testing::TestFile f(content);
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
