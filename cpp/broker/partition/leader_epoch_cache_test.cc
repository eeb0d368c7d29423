#include "broker/partition/leader_epoch_cache.h"

#include <gtest/gtest.h>

#include <fstream>

#include "common/file_env.h"
#include "log/testing.h"

namespace headrace::broker {
namespace {

class LeaderEpochCacheTest : public ::testing::Test {
 protected:
  std::string Dir() const { return dir_.path(); }
  headrace::testing::TempDir dir_;
};

EpochEntry E(int32_t epoch, int64_t start) { return {LeaderEpoch(epoch), Offset(start)}; }
EpochEndOffset End(int32_t epoch, int64_t end) { return {LeaderEpoch(epoch), Offset(end)}; }

TEST_F(LeaderEpochCacheTest, AssignKeepsTheFirstStartOfAnEpoch) {
  LeaderEpochCache c("");
  ASSERT_TRUE(c.Assign(LeaderEpoch(0), Offset(0)).ok());
  ASSERT_TRUE(c.Assign(LeaderEpoch(0), Offset(10)).ok());  // same epoch: ignored
  ASSERT_TRUE(c.Assign(LeaderEpoch(2), Offset(10)).ok());
  EXPECT_EQ(c.entries(), (std::vector<EpochEntry>{E(0, 0), E(2, 10)}));
  EXPECT_EQ(c.latest_epoch(), LeaderEpoch(2));
}

TEST_F(LeaderEpochCacheTest, AssignDropsAStaleTail) {
  LeaderEpochCache c("");
  ASSERT_TRUE(c.Assign(LeaderEpoch(1), Offset(0)).ok());
  ASSERT_TRUE(c.Assign(LeaderEpoch(2), Offset(10)).ok());
  ASSERT_TRUE(c.Assign(LeaderEpoch(3), Offset(20)).ok());
  // Epoch 4 starting at 15: epoch 3's entry (at 20 >= 15) is stale.
  ASSERT_TRUE(c.Assign(LeaderEpoch(4), Offset(15)).ok());
  EXPECT_EQ(c.entries(), (std::vector<EpochEntry>{E(1, 0), E(2, 10), E(4, 15)}));
}

// KIP-101 / KIP-279: what OffsetForLeaderEpoch answers.
TEST_F(LeaderEpochCacheTest, EndOffsetForFollowsKip279) {
  LeaderEpochCache c("");
  ASSERT_TRUE(c.Assign(LeaderEpoch(1), Offset(5)).ok());
  ASSERT_TRUE(c.Assign(LeaderEpoch(3), Offset(20)).ok());
  ASSERT_TRUE(c.Assign(LeaderEpoch(6), Offset(40)).ok());
  const Offset leo(55);
  EXPECT_EQ(c.EndOffsetFor(LeaderEpoch(6), leo), End(6, 55));   // latest: the LEO
  EXPECT_EQ(c.EndOffsetFor(LeaderEpoch(3), leo), End(3, 40));   // next epoch's start
  EXPECT_EQ(c.EndOffsetFor(LeaderEpoch(4), leo), End(3, 40));   // unknown: floor epoch
  EXPECT_EQ(c.EndOffsetFor(LeaderEpoch(2), leo), End(1, 20));
  EXPECT_EQ(c.EndOffsetFor(LeaderEpoch(0), leo), End(0, 5));    // older than all
  EXPECT_EQ(c.EndOffsetFor(LeaderEpoch(7), leo), End(-1, -1));  // newer than all
  EXPECT_EQ(c.EndOffsetFor(LeaderEpoch(-1), leo), End(-1, -1));
  EXPECT_EQ(LeaderEpochCache("").EndOffsetFor(LeaderEpoch(0), leo), End(-1, -1));
}

TEST_F(LeaderEpochCacheTest, TruncationFromBothEnds) {
  LeaderEpochCache c("");
  ASSERT_TRUE(c.Assign(LeaderEpoch(0), Offset(0)).ok());
  ASSERT_TRUE(c.Assign(LeaderEpoch(1), Offset(10)).ok());
  ASSERT_TRUE(c.Assign(LeaderEpoch(2), Offset(20)).ok());
  ASSERT_TRUE(c.TruncateFromEnd(Offset(20)).ok());  // epoch 2 wrote nothing below 20
  EXPECT_EQ(c.entries(), (std::vector<EpochEntry>{E(0, 0), E(1, 10)}));
  ASSERT_TRUE(c.TruncateFromStart(Offset(12)).ok());  // log start moved into epoch 1
  EXPECT_EQ(c.entries(), (std::vector<EpochEntry>{E(1, 12)}));
  ASSERT_TRUE(c.TruncateFromStart(Offset(5)).ok());  // below: nothing changes
  EXPECT_EQ(c.entries(), (std::vector<EpochEntry>{E(1, 12)}));
}

TEST_F(LeaderEpochCacheTest, FileRoundTripsInKafkasFormat) {
  LeaderEpochCache c(Dir());
  ASSERT_TRUE(c.Assign(LeaderEpoch(0), Offset(0)).ok());
  ASSERT_TRUE(c.Assign(LeaderEpoch(4), Offset(150)).ok());
  EXPECT_TRUE(c.dirty());
  ASSERT_TRUE(c.Flush().ok());
  EXPECT_FALSE(c.dirty());
  auto text = ReadWholeFile(*FileEnv::Default(), Dir() + "/leader-epoch-checkpoint");
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "0\n2\n0 0\n4 150\n");
  LeaderEpochCache back(Dir());
  auto found = back.Load();
  ASSERT_TRUE(found.ok());
  EXPECT_TRUE(*found);
  EXPECT_EQ(back.entries(), c.entries());
}

TEST_F(LeaderEpochCacheTest, MissingFileIsEmptyGarbledFileIsCorruption) {
  LeaderEpochCache missing(Dir());
  auto found = missing.Load();
  ASSERT_TRUE(found.ok());
  EXPECT_FALSE(*found);
  for (const char* bad : {"1\n0\n", "0\n2\n0 0\n", "0\n2\n3 10\n1 20\n", "0\n1\n0 0\nx\n", "zz"}) {
    std::ofstream(Dir() + "/leader-epoch-checkpoint", std::ios::trunc) << bad;
    LeaderEpochCache c(Dir());
    auto r = c.Load();
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kCorruption) << bad;
  }
}

}  // namespace
}  // namespace headrace::broker
