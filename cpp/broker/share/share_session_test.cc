#include "broker/share/share_session.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

namespace headrace::broker::share {
namespace {

Uuid Id(uint8_t b) {
  Uuid u;
  u.bytes[15] = b;
  return u;
}

TEST(ShareSessionTest, OpensAdvancesAndCloses) {
  ShareSessionCache cache(10);
  SessionUpdate u = cache.OnFetch("g", "m", 0, {{Id(1), 0}, {Id(1), 1}}, {});
  ASSERT_EQ(u.outcome, SessionOutcome::kOk);
  EXPECT_EQ(u.partitions.size(), 2u);
  // Incremental: adds and forgets.
  u = cache.OnFetch("g", "m", 1, {{Id(2), 0}}, {{Id(1), 0}});
  ASSERT_EQ(u.outcome, SessionOutcome::kOk);
  EXPECT_EQ(u.partitions, (std::vector<TopicIdPartition>{{Id(1), 1}, {Id(2), 0}}));
  // ShareAcknowledge advances the same epoch sequence.
  EXPECT_EQ(cache.OnAcknowledge("g", "m", 2).outcome, SessionOutcome::kOk);
  EXPECT_EQ(cache.OnFetch("g", "m", 3, {}, {}).partitions.size(), 2u);
  // Closing returns what the session held, then it is gone.
  u = cache.OnAcknowledge("g", "m", -1);
  ASSERT_EQ(u.outcome, SessionOutcome::kOk);
  EXPECT_EQ(u.partitions.size(), 2u);
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(cache.OnFetch("g", "m", 4, {}, {}).outcome, SessionOutcome::kNotFound);
}

TEST(ShareSessionTest, EpochRules) {
  ShareSessionCache cache(10);
  EXPECT_EQ(cache.OnFetch("g", "m", 1, {}, {}).outcome, SessionOutcome::kNotFound);
  EXPECT_EQ(cache.OnFetch("g", "m", -1, {}, {}).outcome, SessionOutcome::kNotFound);
  EXPECT_EQ(cache.OnAcknowledge("g", "m", 0).outcome, SessionOutcome::kInvalidEpoch);
  ASSERT_EQ(cache.OnFetch("g", "m", 0, {{Id(1), 0}}, {}).outcome, SessionOutcome::kOk);
  EXPECT_EQ(cache.OnFetch("g", "m", 2, {}, {}).outcome, SessionOutcome::kInvalidEpoch);
  EXPECT_EQ(cache.OnFetch("g", "m", -5, {}, {}).outcome, SessionOutcome::kInvalidEpoch);
  EXPECT_EQ(cache.OnFetch("g", "m", 1, {}, {}).outcome, SessionOutcome::kOk);
  EXPECT_EQ(cache.OnFetch("g", "m", 1, {}, {}).outcome, SessionOutcome::kInvalidEpoch);  // replay
  // Another member of the group has no session.
  EXPECT_EQ(cache.OnFetch("g", "other", 1, {}, {}).outcome, SessionOutcome::kNotFound);
  // Epoch 0 again replaces the session (epoch sequence restarts).
  ASSERT_EQ(cache.OnFetch("g", "m", 0, {}, {}).outcome, SessionOutcome::kOk);
  EXPECT_TRUE(cache.OnFetch("g", "m", 1, {}, {}).partitions.empty());
  EXPECT_EQ(NextShareSessionEpoch(std::numeric_limits<int32_t>::max()), 1);
}

TEST(ShareSessionTest, LimitOnSessions) {
  int64_t now = 0;
  ShareSessionCache cache(2, 1000, [&] { return now; });
  EXPECT_EQ(cache.OnFetch("g", "a", 0, {}, {}).outcome, SessionOutcome::kOk);
  EXPECT_EQ(cache.OnFetch("g", "b", 0, {}, {}).outcome, SessionOutcome::kOk);
  EXPECT_EQ(cache.OnFetch("g", "c", 0, {}, {}).outcome, SessionOutcome::kLimitReached);
  EXPECT_EQ(cache.OnFetch("g", "a", 0, {}, {}).outcome, SessionOutcome::kOk);  // a reopen
  EXPECT_TRUE(cache.Contains("g", "b"));
  EXPECT_TRUE(cache.Remove("g", "b"));
  EXPECT_FALSE(cache.Contains("g", "b"));
  EXPECT_EQ(cache.OnFetch("g", "c", 0, {}, {}).outcome, SessionOutcome::kOk);
  // Full again; a session unused for the idle time makes room, a used one not.
  EXPECT_EQ(cache.OnFetch("g", "d", 0, {}, {}).outcome, SessionOutcome::kLimitReached);
  now = 999;
  EXPECT_EQ(cache.OnFetch("g", "a", 1, {}, {}).outcome, SessionOutcome::kOk);  // a used at 999
  EXPECT_EQ(cache.OnFetch("g", "d", 0, {}, {}).outcome, SessionOutcome::kLimitReached);
  now = 1000;  // c (opened at 0) idle for 1000 ms: dropped
  EXPECT_EQ(cache.OnFetch("g", "d", 0, {}, {}).outcome, SessionOutcome::kOk);
  EXPECT_FALSE(cache.Contains("g", "c"));
  EXPECT_TRUE(cache.Contains("g", "a"));
}

}  // namespace
}  // namespace headrace::broker::share
