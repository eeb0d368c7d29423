#include "broker/fetch/fetch_session.h"

#include <gtest/gtest.h>

#include "broker/fetch/fetch_session_config.h"

namespace headrace::broker::fetch {
namespace {

SessionPartition Part(const std::string& topic, int32_t p, int64_t offset = 0) {
  SessionPartition s;
  s.topic = topic;
  s.partition = p;
  s.fetch_offset = offset;
  s.partition_max_bytes = 1 << 20;
  return s;
}

std::vector<SessionPartition> Parts(int n) {
  std::vector<SessionPartition> out;
  for (int i = 0; i < n; ++i) out.push_back(Part("t", i));
  return out;
}

AnsweredPartition Quiet(int64_t hw) { return {0, hw, hw, 0, false, false, false}; }

TEST(FetchSessionTest, NextEpochWrapsToOne) {
  EXPECT_EQ(NextEpoch(1), 2);
  EXPECT_EQ(NextEpoch(INT32_MAX), 1);
}

TEST(FetchSessionTest, CreateThenIncrementalUpdateAndForget) {
  FetchSessionCache cache(10);
  int32_t id = cache.Create(false, false, Parts(3), 0);
  ASSERT_GT(id, 0);
  EXPECT_EQ(cache.EpochOf(id), 1);
  EXPECT_EQ(cache.partitions(), 3u);

  // Moves t-1, adds u-0, forgets t-2.
  std::vector<SessionPartition> out;
  ASSERT_EQ(cache.Update(id, 1, false, {Part("t", 1, 50), Part("u", 0, 7)}, {Part("t", 2)}, 1, &out),
            KafkaError::kNone);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].topic, "t");
  EXPECT_EQ(out[0].partition, 0);
  EXPECT_EQ(out[1].fetch_offset, 50);
  EXPECT_EQ(out[2].topic, "u");
  EXPECT_EQ(out[2].fetch_offset, 7);
  EXPECT_EQ(cache.EpochOf(id), 2);
  EXPECT_EQ(cache.partitions(), 3u);
}

TEST(FetchSessionTest, AnswerListsOnlyChangedPartitions) {
  FetchSessionCache cache(10);
  std::vector<SessionPartition> parts = Parts(4);
  for (auto& p : parts) p.high_watermark = p.last_stable_offset = 10, p.answered_log_start = 0;
  int32_t id = cache.Create(false, false, parts, 0);
  std::vector<SessionPartition> out;
  ASSERT_EQ(cache.Update(id, 1, false, {}, {}, 1, &out), KafkaError::kNone);
  std::vector<AnsweredPartition> answered = {Quiet(10), Quiet(11), Quiet(10), Quiet(10)};
  answered[2].error_code = 6;  // NOT_LEADER_OR_FOLLOWER
  answered[3].has_records = true;
  std::vector<bool> listed;
  ASSERT_EQ(cache.Answer(id, 2, answered, &listed), KafkaError::kNone);
  EXPECT_EQ(listed, (std::vector<bool>{false, true, true, true}));

  // The partition with records went last; the errored one is listed again
  // once its error is gone (its cached HW was reset).
  ASSERT_EQ(cache.Update(id, 2, false, {}, {}, 2, &out), KafkaError::kNone);
  EXPECT_EQ(out[3].partition, 3);
  std::vector<AnsweredPartition> again = {Quiet(10), Quiet(11), Quiet(10), Quiet(10)};
  ASSERT_EQ(cache.Answer(id, 3, again, &listed), KafkaError::kNone);
  EXPECT_EQ(listed, (std::vector<bool>{false, false, true, false}));
}

TEST(FetchSessionTest, EpochAndIdErrors) {
  FetchSessionCache cache(10);
  int32_t id = cache.Create(false, true, Parts(1), 0);
  std::vector<SessionPartition> out;
  EXPECT_EQ(cache.Update(id + 1, 1, true, {}, {}, 0, &out), KafkaError::kFetchSessionIdNotFound);
  EXPECT_EQ(cache.Update(id, 2, true, {}, {}, 0, &out), KafkaError::kInvalidFetchSessionEpoch);
  EXPECT_EQ(cache.Update(id, 1, false, {}, {}, 0, &out), KafkaError::kFetchSessionTopicIdError);
  ASSERT_EQ(cache.Update(id, 1, true, {}, {}, 0, &out), KafkaError::kNone);
  // A second request with the same epoch (a retry) is refused...
  EXPECT_EQ(cache.Update(id, 1, true, {}, {}, 0, &out), KafkaError::kInvalidFetchSessionEpoch);
  // ...and an answer whose session moved on meanwhile carries nothing.
  ASSERT_EQ(cache.Update(id, 2, true, {}, {}, 0, &out), KafkaError::kNone);
  std::vector<bool> listed;
  EXPECT_EQ(cache.Answer(id, 2, {Quiet(0)}, &listed), KafkaError::kInvalidFetchSessionEpoch);
  EXPECT_EQ(cache.Answer(id, 3, {Quiet(0)}, &listed), KafkaError::kNone);
  EXPECT_TRUE(cache.Remove(id));
  EXPECT_FALSE(cache.Remove(id));
  EXPECT_EQ(cache.Answer(id, 3, {Quiet(0)}, &listed), KafkaError::kFetchSessionIdNotFound);
  EXPECT_EQ(cache.partitions(), 0u);
}

TEST(FetchSessionTest, FullCacheKeepsYoungSessionsAgainstSmallerNewcomers) {
  FetchSessionCache cache(2, /*eviction_age_ms=*/1000);
  int32_t a = cache.Create(false, false, Parts(5), 0);
  int32_t b = cache.Create(false, false, Parts(5), 0);
  ASSERT_GT(a, 0);
  ASSERT_GT(b, 0);
  // Young sessions are evictable only by a privileged newcomer.
  EXPECT_EQ(cache.Create(false, false, Parts(50), 10), 0);
  EXPECT_EQ(cache.size(), 2u);
  // A follower's session evicts the least valuable unprivileged one.
  int32_t f = cache.Create(true, false, Parts(1), 10);
  ASSERT_GT(f, 0);
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.evictions(), 1u);
  // A young privileged session is not evictable by a second follower...
  std::vector<SessionPartition> out;
  int32_t left = cache.EpochOf(a) > 0 ? a : b;
  ASSERT_EQ(cache.Update(left, 1, false, {}, {}, 20, &out), KafkaError::kNone);
  ASSERT_EQ(cache.Update(f, 1, false, {}, {}, 20, &out), KafkaError::kNone);
  int32_t g = cache.Create(true, false, Parts(1), 30);
  ASSERT_GT(g, 0);  // ...but the unprivileged one is
  EXPECT_EQ(cache.EpochOf(left), -1);
  EXPECT_EQ(cache.EpochOf(f), 2);
  EXPECT_EQ(cache.Create(true, false, Parts(1), 40), 0);  // both young and privileged
}

TEST(FetchSessionTest, StaleOrOldSessionsAreEvicted) {
  FetchSessionCache cache(2, /*eviction_age_ms=*/1000);
  int32_t a = cache.Create(false, false, Parts(5), 0);
  int32_t b = cache.Create(false, false, Parts(5), 0);
  std::vector<SessionPartition> out;
  // b keeps being used; a is not used for longer than the eviction age.
  ASSERT_EQ(cache.Update(b, 1, false, {}, {}, 1500, &out), KafkaError::kNone);
  int32_t c = cache.Create(false, false, Parts(1), 1600);
  ASSERT_GT(c, 0);
  EXPECT_EQ(cache.EpochOf(a), -1);  // the stale one went, though larger
  EXPECT_EQ(cache.EpochOf(b), 2);
  // b is old (created > age ago, indexed at its last use), c is young and
  // used: a newcomer at least as valuable as b evicts it; a smaller one not.
  ASSERT_EQ(cache.Update(c, 1, false, {}, {}, 1700, &out), KafkaError::kNone);
  EXPECT_EQ(cache.Create(false, false, Parts(4), 1800), 0);
  int32_t d = cache.Create(false, false, Parts(6), 1800);
  ASSERT_GT(d, 0);
  EXPECT_EQ(cache.EpochOf(b), -1);
  EXPECT_EQ(cache.EpochOf(c), 2);
}

TEST(FetchSessionTest, ZeroSlotsMeansNoSessions) {
  FetchSessionCache cache(0);
  EXPECT_EQ(cache.Create(true, false, Parts(1), 0), 0);
}

TEST(FetchSessionConfigTest, TableKeyWithKafkaDefaultAndRange) {
  FetchSessionConfig c;
  EXPECT_EQ(c.cache_slots, 1000);
  std::map<std::string, std::string> props = {
      {"max.incremental.fetch.session.cache.slots", "5"}, {"other", "x"}};
  ASSERT_TRUE(c.Extract(props).ok());
  EXPECT_EQ(c.cache_slots, 5);
  EXPECT_EQ(props.size(), 1u);
  EXPECT_FALSE(c.Set("max.incremental.fetch.session.cache.slots", "-1").ok());
}

}  // namespace
}  // namespace headrace::broker::fetch
