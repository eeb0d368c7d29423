#include "net/page_cache_loader.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>

#include "common/file_slice.h"
#include "common/test_file.h"

namespace headrace::net {
namespace {

using headrace::testing::TestFile;

Status LoadAndWait(PageCacheLoader& loader, FileSlice range) {
  auto done = std::make_shared<std::promise<Status>>();
  std::future<Status> result = done->get_future();
  loader.Load(std::move(range), [done](Status st) { done->set_value(std::move(st)); });
  if (result.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    return Status::IOError("no completion");
  }
  return result.get();
}

TEST(PageCacheLoaderTest, LoadsARangeIntoThePageCacheThenCompletes) {
  TestFile file(std::string(3 << 20, 'p'));
  bool evicted = file.Evict();
  PageCacheLoader loader;
  Status st = LoadAndWait(loader, file.Slice(4096, (3 << 20) - 8192));
  ASSERT_TRUE(st.ok()) << st.ToString();
  if (evicted) {
    EXPECT_TRUE(RangeCached(file.fd(), 4096, (3 << 20) - 8192));
  }
}

TEST(PageCacheLoaderTest, AFileShorterThanTheRangeIsCorruption) {
  TestFile file(std::string(10000, 'p'));
  PageCacheLoader loader;
  EXPECT_EQ(LoadAndWait(loader, file.Slice(0, 20000)).code(), StatusCode::kCorruption);
}

TEST(PageCacheLoaderTest, AfterStopRangesAreDroppedWithoutCompletion) {
  TestFile file(std::string(10000, 'p'));
  PageCacheLoader loader;
  loader.Stop();
  bool called = false;
  loader.Load(file.Slice(0, 10000), [&called](Status) { called = true; });
  loader.Stop();
  EXPECT_FALSE(called);
}

}  // namespace
}  // namespace headrace::net
