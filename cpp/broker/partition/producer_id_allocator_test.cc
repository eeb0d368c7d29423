#include "broker/partition/producer_id_allocator.h"

#include <gtest/gtest.h>

#include <set>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/file_env.h"
#include "log/testing.h"

namespace headrace::broker {
namespace {

class ProducerIdAllocatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::temp_directory_path() /
            ("hr-pid-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(ProducerIdAllocatorTest, IdsAreUniqueAndNeverReusedAfterReopen) {
  auto a = ProducerIdAllocator::Open(dir_);
  ASSERT_TRUE(a.ok());
  auto first = (*a)->Allocate();
  auto second = (*a)->Allocate();
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->producer_id, 0);
  EXPECT_EQ(first->epoch, 0);
  EXPECT_EQ(second->producer_id, 1);
  auto block = ReadWholeFile(*FileEnv::Default(), dir_ + "/producer_id_block");
  ASSERT_TRUE(block.ok());
  EXPECT_EQ(*block, "1000\n");
  a->reset();
  auto b = ProducerIdAllocator::Open(dir_);
  ASSERT_TRUE(b.ok());
  auto next = (*b)->Allocate();
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->producer_id, ProducerIdAllocator::kBlockSize);
  block = ReadWholeFile(*FileEnv::Default(), dir_ + "/producer_id_block");
  ASSERT_TRUE(block.ok());
  EXPECT_EQ(*block, "2000\n");
}

TEST_F(ProducerIdAllocatorTest, MatchingIdAndEpochBumpsTheEpoch) {
  auto a = ProducerIdAllocator::Open(dir_);
  ASSERT_TRUE(a.ok());
  auto allocated = (*a)->Allocate();
  ASSERT_TRUE(allocated.ok());
  ProducerIdAndEpoch p = *allocated;
  auto bumped = (*a)->BumpOrAllocate(p);
  ASSERT_TRUE(bumped.ok());
  EXPECT_EQ(bumped->producer_id, p.producer_id);
  EXPECT_EQ(bumped->epoch, 1);
  // The stale epoch no longer matches: a new id.
  auto stale = (*a)->BumpOrAllocate(p);
  EXPECT_NE(stale->producer_id, p.producer_id);
  EXPECT_EQ(stale->epoch, 0);
  auto unknown = (*a)->BumpOrAllocate({424242, 3});
  EXPECT_NE(unknown->producer_id, 424242);
}

TEST_F(ProducerIdAllocatorTest, GarbledBlockFileIsCorruption) {
  std::ofstream(dir_ + "/producer_id_block") << "12x\n";
  auto a = ProducerIdAllocator::Open(dir_);
  EXPECT_EQ(a.status().code(), StatusCode::kCorruption);
}

}  // namespace
}  // namespace headrace::broker

namespace headrace::broker {
namespace {

TEST(ProducerIdStripeTest, BrokersOfAClusterNeverHandOutTheSameId) {
  headrace::testing::TempDir d1, d2;
  auto a = ProducerIdAllocator::Open(d1.path());
  auto b = ProducerIdAllocator::Open(d2.path());
  ASSERT_TRUE(a.ok() && b.ok());
  (*a)->SetClusterStripe(1);
  (*b)->SetClusterStripe(2);
  std::set<int64_t> seen;
  for (int i = 0; i < 2500; ++i) {  // across several blocks
    auto x = (*a)->Allocate();
    auto y = (*b)->Allocate();
    ASSERT_TRUE(x.ok() && y.ok());
    EXPECT_EQ(x->producer_id % ProducerIdAllocator::kClusterStride, 1);
    EXPECT_EQ(y->producer_id % ProducerIdAllocator::kClusterStride, 2);
    EXPECT_TRUE(seen.insert(x->producer_id).second);
    EXPECT_TRUE(seen.insert(y->producer_id).second);
  }
  // KIP-360 bumps still recognise the striped ids.
  auto first = (*a)->Allocate();
  auto bumped = (*a)->BumpOrAllocate(*first);
  ASSERT_TRUE(bumped.ok());
  EXPECT_EQ(bumped->producer_id, first->producer_id);
  EXPECT_EQ(bumped->epoch, 1);
}

}  // namespace
}  // namespace headrace::broker
