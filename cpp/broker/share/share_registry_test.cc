#include "broker/share/share_registry.h"

#include <gtest/gtest.h>

#include <mutex>

namespace headrace::broker::share {
namespace {

Uuid Id(uint8_t b) {
  Uuid u;
  u.bytes[15] = b;
  return u;
}

TEST(ShareRegistryTest, OneSharePartitionPerGroupAndPartition) {
  ShareRegistry reg;
  SharePartitionConfig config;
  auto a = reg.Get({"g", Id(1), 0});
  EXPECT_EQ(reg.Get({"g", Id(1), 0}), a);
  EXPECT_NE(reg.Get({"g", Id(1), 1}), a);
  EXPECT_NE(reg.Get({"h", Id(1), 0}), a);
  EXPECT_EQ(reg.Find({"g", Id(2), 0}), nullptr);
  {
    std::lock_guard<std::mutex> lock(a->mu);
    SharePartition& sp = a->Ensure(config, 7);
    EXPECT_EQ(sp.start_offset(), 7);
    EXPECT_EQ(&a->Ensure(config, 100), &sp);  // created once: the start stays
  }
  EXPECT_EQ(reg.Sum().share_partitions, 1);  // the others were never used
}

TEST(ShareRegistryTest, ReleaseMemberReleasesAcrossTheGroupOnly) {
  ShareRegistry reg;
  SharePartitionConfig config;
  for (int p = 0; p < 2; ++p) {
    auto e = reg.Get({"g", Id(1), p});
    std::lock_guard<std::mutex> lock(e->mu);
    EXPECT_FALSE(e->Ensure(config, 0).Acquire("m", 10, 4, 0).empty());
  }
  auto other = reg.Get({"h", Id(1), 0});
  {
    std::lock_guard<std::mutex> lock(other->mu);
    EXPECT_FALSE(other->Ensure(config, 0).Acquire("m", 10, 4, 0).empty());
  }
  EXPECT_EQ(reg.Sum().acquired_now, 12);
  EXPECT_EQ(reg.ReleaseMember("g", "m"), 8);
  ShareRegistry::Totals t = reg.Sum();
  EXPECT_EQ(t.acquired_now, 4);  // group h's member is another member
  EXPECT_EQ(t.counters.released, 8);
  EXPECT_EQ(t.share_partitions, 3);
}

}  // namespace
}  // namespace headrace::broker::share
