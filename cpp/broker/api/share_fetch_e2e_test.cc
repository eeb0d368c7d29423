// End to end: ShareFetch (78) and ShareAcknowledge (79) against a real
// headrace::Broker over TCP (docs/share-groups.md): the share-partition
// starting at the high watermark, acquisition with AcquiredRecords and the
// log's batches, RELEASE -> redelivery with delivery count 2, REJECT ->
// never again, acknowledgement errors, and the share session's epoch rules.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "broker/api/broker_test_fixture.h"
#include "broker/base/kafka_error.h"
#include "log/testing.h"

namespace headrace {
namespace {

using broker::Code;
using broker::KafkaError;
using namespace protocol;  // message structs

class ShareFetchE2ETest : public testing::BrokerFixture {
 protected:
  void SetUp() override { StartBroker({{"group.share.record.lock.duration.ms", "1000"}}); }

  Uuid CreateTopic(const std::string& topic) {
    CreateTopicsRequest req;
    auto& t = req.topics.emplace_back();
    t.name = topic;
    t.num_partitions = 1;
    t.replication_factor = 1;
    req.timeout_ms = 10000;
    auto resp = Call<CreateTopicsResponse>(req, 7);
    EXPECT_EQ(resp.topics.size(), 1u);
    return resp.topics.empty() ? Uuid{} : resp.topics[0].topic_id;
  }
  void Produce(const std::string& topic, int records) {
    ProduceRequest req;
    req.acks = -1;
    req.timeout_ms = 5000;
    auto& t = req.topic_data.emplace_back();
    t.name = topic;
    t.partition_data.push_back({0, Records::FromBytes(testing::MakeBatch(records, 10, 1000))});
    auto resp = Call<ProduceResponse>(req, 9);
    ASSERT_EQ(resp.responses.at(0).partition_responses.at(0).error_code, 0);
  }
  ShareFetchResponse Fetch(const Uuid& id, int32_t epoch, int32_t max_records = 100,
                           std::vector<ShareFetchRequest::AcknowledgementBatch> acks = {},
                           const std::string& member = "m1") {
    ShareFetchRequest req;
    req.group_id = "g";
    req.member_id = member;
    req.share_session_epoch = epoch;
    req.max_wait_ms = 0;
    req.max_records = max_records;
    req.batch_size = max_records;
    auto& t = req.topics.emplace_back();
    t.topic_id = id;
    auto& p = t.partitions.emplace_back();
    p.partition_index = 0;
    p.acknowledgement_batches = std::move(acks);
    return Call<ShareFetchResponse>(req, 1);
  }
  ShareAcknowledgeResponse Ack(const Uuid& id, int32_t epoch, int64_t first, int64_t last,
                               int8_t type, const std::string& member = "m1") {
    ShareAcknowledgeRequest req;
    req.group_id = "g";
    req.member_id = member;
    req.share_session_epoch = epoch;
    auto& t = req.topics.emplace_back();
    t.topic_id = id;
    auto& p = t.partitions.emplace_back();
    p.partition_index = 0;
    p.acknowledgement_batches.push_back({first, last, {type}});
    return Call<ShareAcknowledgeResponse>(req, 1);
  }
  using Acquired = ShareFetchResponse::AcquiredRecords;
  static std::vector<std::tuple<int64_t, int64_t, int16_t>> Ranges(const ShareFetchResponse& r) {
    std::vector<std::tuple<int64_t, int64_t, int16_t>> out;
    for (const auto& t : r.responses)
      for (const auto& p : t.partitions)
        for (const Acquired& a : p.acquired_records)
          out.emplace_back(a.first_offset, a.last_offset, a.delivery_count);
    return out;
  }
};

constexpr int8_t kAccept = 1, kRelease = 2, kReject = 3;

TEST_F(ShareFetchE2ETest, AcquiresFromTheHighWatermarkReleasesAndRejects) {
  const Uuid id = CreateTopic("share-e2e");
  Produce("share-e2e", 3);  // before the group's first fetch: not delivered (latest)
  ShareFetchResponse r = Fetch(id, 0);
  ASSERT_EQ(r.error_code, 0);
  EXPECT_EQ(r.acquisition_lock_timeout_ms, 1000);
  ASSERT_EQ(r.responses.size(), 1u);  // a new session lists its partitions
  EXPECT_TRUE(Ranges(r).empty());

  Produce("share-e2e", 4);  // offsets 3..6
  r = Fetch(id, 1);
  ASSERT_EQ(r.error_code, 0);
  EXPECT_EQ(Ranges(r), (std::vector<std::tuple<int64_t, int64_t, int16_t>>{{3, 6, 1}}));
  EXPECT_GT(r.responses.at(0).partitions.at(0).records.size(), 0u);  // the batch itself

  // Acknowledge 3 ACCEPT, 4 RELEASE, 5 REJECT; 6 stays acquired.
  EXPECT_EQ(Ack(id, 2, 3, 3, kAccept).responses.at(0).partitions.at(0).error_code, 0);
  EXPECT_EQ(Ack(id, 3, 4, 4, kRelease).responses.at(0).partitions.at(0).error_code, 0);
  EXPECT_EQ(Ack(id, 4, 5, 5, kReject).responses.at(0).partitions.at(0).error_code, 0);
  // Acknowledging 3 again: no longer acquired.
  EXPECT_EQ(Ack(id, 5, 3, 3, kAccept).responses.at(0).partitions.at(0).error_code,
            Code(KafkaError::kInvalidRecordState));
  // Another member gets the released record 4, delivered a second time.
  r = Fetch(id, 0, 100, {}, "m2");
  EXPECT_EQ(Ranges(r), (std::vector<std::tuple<int64_t, int64_t, int16_t>>{{4, 4, 2}}));
  // m1 accepts 6 piggy-backed on its next fetch; nothing is left for it.
  r = Fetch(id, 6, 100, {{6, 6, {kAccept}}});
  ASSERT_EQ(r.error_code, 0);
  EXPECT_EQ(r.responses.at(0).partitions.at(0).acknowledge_error_code, 0);
  EXPECT_TRUE(Ranges(r).empty());
  // m2 closes its session without acknowledging: 4 is released again.
  r = Fetch(id, -1, 100, {}, "m2");
  ASSERT_EQ(r.error_code, 0);
  r = Fetch(id, 7);
  EXPECT_EQ(Ranges(r), (std::vector<std::tuple<int64_t, int64_t, int16_t>>{{4, 4, 3}}));
}

TEST_F(ShareFetchE2ETest, ExpiredLocksAreRedelivered) {
  const Uuid id = CreateTopic("share-expiry");
  ASSERT_EQ(Fetch(id, 0).error_code, 0);
  Produce("share-expiry", 2);
  EXPECT_EQ(Ranges(Fetch(id, 1)), (std::vector<std::tuple<int64_t, int64_t, int16_t>>{{0, 1, 1}}));
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));  // past the 1 s lock
  EXPECT_EQ(Ack(id, 2, 0, 1, kAccept).responses.at(0).partitions.at(0).error_code,
            Code(KafkaError::kInvalidRecordState));
  EXPECT_EQ(Ranges(Fetch(id, 3)), (std::vector<std::tuple<int64_t, int64_t, int16_t>>{{0, 1, 2}}));
}

TEST_F(ShareFetchE2ETest, SessionEpochRulesAndLimits) {
  const Uuid id = CreateTopic("share-session");
  EXPECT_EQ(Fetch(id, 1).error_code, Code(KafkaError::kShareSessionNotFound));
  ASSERT_EQ(Fetch(id, 0).error_code, 0);
  EXPECT_EQ(Fetch(id, 5).error_code, Code(KafkaError::kInvalidShareSessionEpoch));
  EXPECT_EQ(Ack(id, 0, 0, 0, kAccept).error_code, Code(KafkaError::kInvalidShareSessionEpoch));
  // Acknowledgements in a request that opens a session: INVALID_REQUEST.
  EXPECT_EQ(Fetch(id, 0, 100, {{0, 0, {kAccept}}}).error_code, Code(KafkaError::kInvalidRequest));
  // MaxRecords 0 only acknowledges: nothing acquired.
  Produce("share-session", 2);
  EXPECT_TRUE(Ranges(Fetch(id, 1, 0)).empty());
  EXPECT_EQ(Ranges(Fetch(id, 2, 1)), (std::vector<std::tuple<int64_t, int64_t, int16_t>>{{0, 0, 1}}));
  // A malformed acknowledgement (first > last).
  EXPECT_EQ(Ack(id, 3, 1, 0, kAccept).responses.at(0).partitions.at(0).error_code,
            Code(KafkaError::kInvalidRequest));
  // An unknown topic id.
  Uuid unknown;
  unknown.bytes[0] = 7;
  ShareFetchResponse r = Fetch(unknown, 4);
  ASSERT_EQ(r.error_code, 0);
  bool found = false;
  for (const auto& t : r.responses)
    for (const auto& p : t.partitions)
      if (t.topic_id == unknown) found = p.error_code == Code(KafkaError::kUnknownTopicId);
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace headrace
