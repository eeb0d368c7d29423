// End to end: the share coordinator's five RPCs (KIP-932,
// InitializeShareGroupState 83, ReadShareGroupState 84,
// WriteShareGroupState 85, DeleteShareGroupState 86,
// ReadShareGroupStateSummary 87) against a real single-node
// headrace::Broker over TCP, whose local share coordinator owns every key:
// initialize then read, writes merged and kept across a restart, state and
// leader epoch fencing, malformed batches, never-initialized and unknown
// keys, delete, the state a ShareFetch stored, and CLUSTER_ACTION.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "broker/api/broker_test_fixture.h"
#include "broker/base/kafka_error.h"

namespace headrace {
namespace {

using broker::Code;
using broker::KafkaError;
using namespace protocol;  // message structs

// (first, last, delivery state, delivery count)
using Batch = std::tuple<int64_t, int64_t, int8_t, int16_t>;
constexpr int8_t kAvailable = 0, kAcquired = 1, kAcked = 2, kArchived = 4;

class ShareStateE2ETest : public testing::BrokerFixture {
 protected:
  Uuid CreateTopic(const std::string& topic, int32_t partitions = 1) {
    CreateTopicsRequest req;
    auto& t = req.topics.emplace_back();
    t.name = topic;
    t.num_partitions = partitions;
    t.replication_factor = 1;
    req.timeout_ms = 10000;
    auto resp = Call<CreateTopicsResponse>(req, 7);
    EXPECT_EQ(resp.topics.size(), 1u);
    EXPECT_EQ(resp.topics.empty() ? -1 : resp.topics[0].error_code, 0);
    return resp.topics.empty() ? Uuid{} : resp.topics[0].topic_id;
  }

  // The one partition result of a single-partition answer (a default one,
  // with a test failure, when the answer has another shape).
  template <typename Resp>
  static auto Only(const Resp& resp, const Uuid& id, int32_t partition) {
    using P = std::remove_cvref_t<decltype(resp.results[0].partitions[0])>;
    if (resp.results.size() != 1 || resp.results[0].partitions.size() != 1) {
      ADD_FAILURE() << "not one partition result";
      return P{};
    }
    EXPECT_EQ(resp.results[0].topic_id, id);
    EXPECT_EQ(resp.results[0].partitions[0].partition, partition);
    return resp.results[0].partitions[0];
  }

  int16_t Init(const Uuid& id, int32_t partition, int32_t state_epoch, int64_t start,
               const std::string& group = "g") {
    InitializeShareGroupStateRequest req;
    req.group_id = group;
    auto& t = req.topics.emplace_back();
    t.topic_id = id;
    t.partitions.push_back({partition, state_epoch, start});
    return Only(Call<InitializeShareGroupStateResponse>(req, 0), id, partition).error_code;
  }
  ReadShareGroupStateResponse::PartitionResult Read(const Uuid& id, int32_t partition,
                                                    int32_t leader_epoch = -1,
                                                    const std::string& group = "g") {
    ReadShareGroupStateRequest req;
    req.group_id = group;
    auto& t = req.topics.emplace_back();
    t.topic_id = id;
    t.partitions.push_back({partition, leader_epoch});
    return Only(Call<ReadShareGroupStateResponse>(req, 0), id, partition);
  }
  int16_t Write(const Uuid& id, int32_t partition, int32_t state_epoch, int32_t leader_epoch,
                int64_t start, const std::vector<Batch>& batches,
                const std::string& group = "g") {
    WriteShareGroupStateRequest req;
    req.group_id = group;
    auto& t = req.topics.emplace_back();
    t.topic_id = id;
    auto& p = t.partitions.emplace_back();
    p.partition = partition;
    p.state_epoch = state_epoch;
    p.leader_epoch = leader_epoch;
    p.start_offset = start;
    for (const auto& [first, last, state, count] : batches) {
      p.state_batches.push_back({first, last, state, count});
    }
    return Only(Call<WriteShareGroupStateResponse>(req, 0), id, partition).error_code;
  }
  ReadShareGroupStateSummaryResponse::PartitionResult Summary(const Uuid& id, int32_t partition,
                                                              const std::string& group = "g") {
    ReadShareGroupStateSummaryRequest req;
    req.group_id = group;
    auto& t = req.topics.emplace_back();
    t.topic_id = id;
    t.partitions.push_back({partition, -1});
    return Only(Call<ReadShareGroupStateSummaryResponse>(req, 0), id, partition);
  }
  std::vector<int16_t> Delete(const Uuid& id, const std::vector<int32_t>& partitions,
                              const std::string& group = "g") {
    DeleteShareGroupStateRequest req;
    req.group_id = group;
    auto& t = req.topics.emplace_back();
    t.topic_id = id;
    for (int32_t p : partitions) t.partitions.push_back({p});
    auto resp = Call<DeleteShareGroupStateResponse>(req, 0);
    std::vector<int16_t> out;
    for (const auto& r : resp.results) {
      EXPECT_EQ(r.topic_id, id);
      for (const auto& p : r.partitions) out.push_back(p.error_code);
    }
    return out;
  }
  static std::vector<Batch> Batches(const ReadShareGroupStateResponse::PartitionResult& r) {
    std::vector<Batch> out;
    for (const auto& b : r.state_batches) {
      out.emplace_back(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count);
    }
    return out;
  }
};

TEST_F(ShareStateE2ETest, InitializeThenReadGivesTheStartAndStateEpoch) {
  const Uuid id = CreateTopic("ss-init", 2);
  ASSERT_EQ(Init(id, 0, 1, 100), 0);
  auto r = Read(id, 0);
  ASSERT_EQ(r.error_code, 0);
  EXPECT_FALSE(r.error_message.has_value());
  EXPECT_EQ(r.state_epoch, 1);
  EXPECT_EQ(r.start_offset, 100);
  EXPECT_TRUE(r.state_batches.empty());
  auto s = Summary(id, 0);
  EXPECT_EQ(s.error_code, 0);
  EXPECT_EQ(s.state_epoch, 1);
  EXPECT_EQ(s.start_offset, 100);
  // Initialized with the start not yet known (-1).
  ASSERT_EQ(Init(id, 1, 0, -1), 0);
  EXPECT_EQ(Read(id, 1).start_offset, -1);

  // The answer mirrors the request: every topic and partition, in order.
  Uuid unknown;
  unknown.bytes[3] = 9;
  ReadShareGroupStateRequest req;
  req.group_id = "g";
  req.topics.push_back({id, {{1, -1}, {0, -1}, {5, -1}}});
  req.topics.push_back({unknown, {{0, -1}}});
  auto resp = Call<ReadShareGroupStateResponse>(req, 0);
  ASSERT_EQ(resp.results.size(), 2u);
  EXPECT_EQ(resp.results[0].topic_id, id);
  ASSERT_EQ(resp.results[0].partitions.size(), 3u);
  EXPECT_EQ(resp.results[0].partitions[0].partition, 1);
  EXPECT_EQ(resp.results[0].partitions[0].start_offset, -1);
  EXPECT_EQ(resp.results[0].partitions[1].partition, 0);
  EXPECT_EQ(resp.results[0].partitions[1].start_offset, 100);
  EXPECT_EQ(resp.results[0].partitions[2].partition, 5);
  EXPECT_EQ(resp.results[0].partitions[2].error_code,
            Code(KafkaError::kUnknownTopicOrPartition));
  EXPECT_EQ(resp.results[1].topic_id, unknown);
  ASSERT_EQ(resp.results[1].partitions.size(), 1u);
  EXPECT_EQ(resp.results[1].partitions[0].error_code,
            Code(KafkaError::kUnknownTopicOrPartition));
}

TEST_F(ShareStateE2ETest, WritesAreMergedAndSurviveARestart) {
  const Uuid id = CreateTopic("ss-write");
  ASSERT_EQ(Init(id, 0, 0, 10), 0);
  ASSERT_EQ(Write(id, 0, 0, 1, 10, {{10, 14, kAcked, 1}, {15, 15, kAvailable, 2}}), 0);
  // Start -1 keeps the start; the batches are laid over the stored ones.
  ASSERT_EQ(Write(id, 0, 0, 1, -1, {{15, 15, kArchived, 3}, {16, 19, kAvailable, 1}}), 0);
  auto r = Read(id, 0, 1);
  ASSERT_EQ(r.error_code, 0);
  EXPECT_EQ(r.start_offset, 10);
  EXPECT_EQ(Batches(r), (std::vector<Batch>{{10, 14, kAcked, 1},
                                            {15, 15, kArchived, 3},
                                            {16, 19, kAvailable, 1}}));
  // A new start cuts the batches below it.
  ASSERT_EQ(Write(id, 0, 0, 2, 15, {}), 0);
  r = Read(id, 0, 2);
  EXPECT_EQ(r.start_offset, 15);
  EXPECT_EQ(Batches(r), (std::vector<Batch>{{15, 15, kArchived, 3}, {16, 19, kAvailable, 1}}));

  RestartBroker();
  r = Read(id, 0, 2);
  ASSERT_EQ(r.error_code, 0);
  EXPECT_EQ(r.start_offset, 15);
  EXPECT_EQ(Batches(r), (std::vector<Batch>{{15, 15, kArchived, 3}, {16, 19, kAvailable, 1}}));
  EXPECT_EQ(Summary(id, 0).start_offset, 15);
}

TEST_F(ShareStateE2ETest, StaleStateAndLeaderEpochsAreFenced) {
  const Uuid id = CreateTopic("ss-fence");
  ASSERT_EQ(Init(id, 0, 0, 0), 0);
  ASSERT_EQ(Write(id, 0, 0, 5, 0, {{0, 3, kAcked, 1}}), 0);
  // A writer of another state epoch, or of an older leader epoch.
  EXPECT_EQ(Write(id, 0, 1, 5, 0, {}), Code(KafkaError::kFencedStateEpoch));
  EXPECT_EQ(Write(id, 0, 0, 4, 0, {}), Code(KafkaError::kFencedLeaderEpoch));
  EXPECT_EQ(Read(id, 0, 4).error_code, Code(KafkaError::kFencedLeaderEpoch));
  EXPECT_EQ(Read(id, 0, 5).error_code, 0);
  EXPECT_EQ(Read(id, 0, 6).error_code, 0);
  EXPECT_EQ(Read(id, 0, -1).error_code, 0);  // no leader epoch given
  // Initializing again needs a higher state epoch; it resets the state.
  EXPECT_EQ(Init(id, 0, 0, 50), Code(KafkaError::kFencedStateEpoch));
  ASSERT_EQ(Init(id, 0, 1, 50), 0);
  auto r = Read(id, 0);
  EXPECT_EQ(r.state_epoch, 1);
  EXPECT_EQ(r.start_offset, 50);
  EXPECT_TRUE(r.state_batches.empty());
  // The leader of the old state epoch is fenced now.
  EXPECT_EQ(Write(id, 0, 0, 5, 60, {}), Code(KafkaError::kFencedStateEpoch));
  EXPECT_EQ(Write(id, 0, 1, 5, 60, {}), 0);
  EXPECT_EQ(Summary(id, 0).start_offset, 60);
}

TEST_F(ShareStateE2ETest, MalformedRequestsAreInvalidAndChangeNothing) {
  const Uuid id = CreateTopic("ss-invalid");
  ASSERT_EQ(Init(id, 0, 0, 0), 0);
  ASSERT_EQ(Write(id, 0, 0, 0, 0, {{0, 1, kAcked, 1}}), 0);
  const int16_t invalid = Code(KafkaError::kInvalidRequest);
  EXPECT_EQ(Write(id, 0, 0, 0, -1, {{5, 4, kAcked, 1}}), invalid);            // first > last
  EXPECT_EQ(Write(id, 0, 0, 0, -1, {{-2, 4, kAcked, 1}}), invalid);           // negative offset
  EXPECT_EQ(Write(id, 0, 0, 0, -1, {{2, 4, kAcquired, 1}}), invalid);         // not durable
  EXPECT_EQ(Write(id, 0, 0, 0, -1, {{2, 4, 3, 1}}), invalid);                 // unknown state
  EXPECT_EQ(Write(id, 0, 0, 0, -1, {{2, 4, kAcked, -1}}), invalid);           // negative count
  EXPECT_EQ(Write(id, 0, 0, 0, -1, {{2, 4, kAcked, 1}, {4, 6, kAcked, 1}}), invalid);  // overlap
  EXPECT_EQ(Write(id, 0, 0, 0, -1, {{5, 6, kAcked, 1}, {2, 4, kAcked, 1}}), invalid);  // unsorted
  auto r = Read(id, 0);
  ASSERT_EQ(r.error_code, 0);
  EXPECT_EQ(Batches(r), (std::vector<Batch>{{0, 1, kAcked, 1}}));
  // A negative partition, an empty group: INVALID_REQUEST with a message.
  auto neg = Read(id, -1);
  EXPECT_EQ(neg.error_code, invalid);
  EXPECT_TRUE(neg.error_message.has_value());
  EXPECT_EQ(Init(id, -1, 0, 0), invalid);
  EXPECT_EQ(Write(id, 0, 0, 0, 0, {}, /*group=*/""), invalid);
  EXPECT_EQ(Summary(id, 0, "").error_code, invalid);
  EXPECT_EQ(Delete(id, {0}, ""), (std::vector<int16_t>{invalid}));
  EXPECT_EQ(Read(id, 0).error_code, 0);  // still there
}

TEST_F(ShareStateE2ETest, NeverInitializedAndUnknownKeys) {
  const Uuid id = CreateTopic("ss-unknown", 2);
  const int16_t invalid = Code(KafkaError::kInvalidRequest);
  const int16_t unknown_tp = Code(KafkaError::kUnknownTopicOrPartition);
  // A share-partition never initialized: reads and writes are refused (as
  // Kafka), the summary says "not initialized", a delete is no error.
  auto r = Read(id, 0);
  EXPECT_EQ(r.error_code, invalid);
  EXPECT_EQ(r.error_message.value_or(""),
            "Read operation on uninitialized share partition not allowed.");
  EXPECT_EQ(Write(id, 0, 0, 0, 5, {{5, 5, kAcked, 1}}), invalid);
  EXPECT_EQ(Read(id, 0).error_code, invalid);  // the write stored nothing
  auto s = Summary(id, 0);
  EXPECT_EQ(s.error_code, 0);
  EXPECT_EQ(s.start_offset, -1);
  EXPECT_EQ(s.state_epoch, 0);
  EXPECT_EQ(Delete(id, {0, 1}), (std::vector<int16_t>{0, 0}));
  // Another group's state is not this group's.
  ASSERT_EQ(Init(id, 1, 0, 7, "other"), 0);
  EXPECT_EQ(Read(id, 1, -1, "other").start_offset, 7);
  EXPECT_EQ(Read(id, 1).error_code, invalid);
  // A topic id nobody has, a partition the topic does not have.
  Uuid nobody;
  nobody.bytes[0] = 42;
  EXPECT_EQ(Init(nobody, 0, 0, 0), unknown_tp);
  EXPECT_EQ(Read(nobody, 0).error_code, unknown_tp);
  EXPECT_EQ(Write(nobody, 0, 0, 0, 0, {}), unknown_tp);
  EXPECT_EQ(Summary(nobody, 0).error_code, unknown_tp);
  EXPECT_EQ(Delete(nobody, {0}), (std::vector<int16_t>{unknown_tp}));
  EXPECT_EQ(Init(id, 2, 0, 0), unknown_tp);
  EXPECT_EQ(Read(Uuid{}, 0).error_code, unknown_tp);
}

TEST_F(ShareStateE2ETest, DeleteForgetsTheListedPartitions) {
  const Uuid id = CreateTopic("ss-delete", 3);
  for (int32_t p = 0; p < 3; ++p) ASSERT_EQ(Init(id, p, 0, 10 * p), 0) << p;
  ASSERT_EQ(Write(id, 0, 0, 0, -1, {{0, 4, kAcked, 1}}), 0);
  EXPECT_EQ(Delete(id, {0, 2}), (std::vector<int16_t>{0, 0}));
  EXPECT_EQ(Read(id, 0).error_code, Code(KafkaError::kInvalidRequest));
  EXPECT_EQ(Read(id, 2).error_code, Code(KafkaError::kInvalidRequest));
  EXPECT_EQ(Read(id, 1).start_offset, 10);
  EXPECT_EQ(Summary(id, 0).start_offset, -1);
  // Deleted for good, and the key can start over.
  RestartBroker();
  EXPECT_EQ(Read(id, 0).error_code, Code(KafkaError::kInvalidRequest));
  EXPECT_EQ(Read(id, 1).start_offset, 10);
  ASSERT_EQ(Init(id, 0, 0, 3), 0);
  auto r = Read(id, 0);
  EXPECT_EQ(r.start_offset, 3);
  EXPECT_TRUE(r.state_batches.empty());
}

TEST_F(ShareStateE2ETest, ReadsTheStateAShareFetchStored) {
  const Uuid id = CreateTopic("ss-fetch");
  ShareFetchRequest req;
  req.group_id = "sg";
  req.member_id = "m1";
  req.share_session_epoch = 0;
  req.max_wait_ms = 0;
  req.max_records = 10;
  req.batch_size = 10;
  auto& t = req.topics.emplace_back();
  t.topic_id = id;
  t.partitions.emplace_back().partition_index = 0;
  ASSERT_EQ(Call<ShareFetchResponse>(req, 1).error_code, 0);
  // The share-partition was created at the high watermark (0) and stored.
  auto r = Read(id, 0, -1, "sg");
  ASSERT_EQ(r.error_code, 0);
  EXPECT_EQ(r.start_offset, 0);
  EXPECT_EQ(r.state_epoch, 0);
}

// DeleteShareGroupOffsets (92) at the group's coordinator: every partition
// of the named topics loses its stored state; an unknown topic is one
// UNKNOWN_TOPIC_OR_PARTITION result; a group with a member is refused.
TEST_F(ShareStateE2ETest, DeleteShareGroupOffsetsForgetsWholeTopics) {
  const Uuid id = CreateTopic("ss-del-offsets", 2);
  ASSERT_EQ(Init(id, 0, 0, 5, "dg"), 0);
  ASSERT_EQ(Init(id, 1, 0, 7, "dg"), 0);
  DeleteShareGroupOffsetsRequest req;
  req.group_id = "dg";
  req.topics.push_back({"ss-del-offsets"});
  req.topics.push_back({"no-such-topic"});
  auto resp = Call<DeleteShareGroupOffsetsResponse>(req, 0);
  ASSERT_EQ(resp.error_code, 0);
  ASSERT_EQ(resp.responses.size(), 2u);
  EXPECT_EQ(resp.responses[0].topic_id, id);
  ASSERT_EQ(resp.responses[0].partitions.size(), 2u);
  for (const auto& p : resp.responses[0].partitions) EXPECT_EQ(p.error_code, 0);
  ASSERT_EQ(resp.responses[1].partitions.size(), 1u);
  EXPECT_EQ(resp.responses[1].partitions[0].error_code, 3);  // UNKNOWN_TOPIC_OR_PARTITION
  EXPECT_EQ(Read(id, 0, -1, "dg").error_code, 42);  // never initialized again
  EXPECT_EQ(Read(id, 1, -1, "dg").error_code, 42);
  EXPECT_EQ(Summary(id, 0, "dg").start_offset, -1);

  // A member joins: the group is not empty any more.
  ShareGroupHeartbeatRequest hb;
  hb.group_id = "dg";
  hb.member_id = "member-1";
  hb.member_epoch = 0;
  hb.subscribed_topic_names = std::vector<std::string>{"ss-del-offsets"};
  ASSERT_EQ(Call<ShareGroupHeartbeatResponse>(hb, 1).error_code, 0);
  ASSERT_EQ(Init(id, 0, 0, 5, "dg"), 0);
  auto refused = Call<DeleteShareGroupOffsetsResponse>(req, 0);
  EXPECT_EQ(refused.error_code, 68);  // NON_EMPTY_GROUP
  EXPECT_EQ(Read(id, 0, -1, "dg").start_offset, 5);
}

// With an authorizer and no ACLs, the anonymous principal has no
// CLUSTER_ACTION: every partition of every one of the five is refused.
class ShareStateAuthE2ETest : public ShareStateE2ETest {
 protected:
  ShareStateAuthE2ETest() {
    base_settings_["authorizer.class.name"] = "kafka.security.authorizer.AclAuthorizer";
  }
};

TEST_F(ShareStateAuthE2ETest, WithoutClusterActionEveryPartitionIsRefused) {
  Uuid id;
  id.bytes[0] = 1;
  const int16_t refused = Code(KafkaError::kClusterAuthorizationFailed);
  EXPECT_EQ(Init(id, 0, 0, 0), refused);
  EXPECT_EQ(Read(id, 0).error_code, refused);
  EXPECT_EQ(Write(id, 0, 0, 0, 0, {}), refused);
  EXPECT_EQ(Summary(id, 0).error_code, refused);
  EXPECT_EQ(Delete(id, {0, 1, -1}), (std::vector<int16_t>{refused, refused, refused}));
}

class ShareStateSuperUserE2ETest : public ShareStateE2ETest {
 protected:
  ShareStateSuperUserE2ETest() {
    base_settings_["authorizer.class.name"] = "kafka.security.authorizer.AclAuthorizer";
    base_settings_["super.users"] = "User:ANONYMOUS";
  }
};

TEST_F(ShareStateSuperUserE2ETest, ASuperUserGetsThrough) {
  const Uuid id = CreateTopic("ss-super");
  ASSERT_EQ(Init(id, 0, 0, 4), 0);
  EXPECT_EQ(Read(id, 0).start_offset, 4);
}

}  // namespace
}  // namespace headrace
