// End to end over a socket: the transactional data plane. A transactional
// producer's batches hold the last stable offset; WriteTxnMarkers (API 27)
// commits or aborts them; Fetch with isolation_level 1 stops at the LSO and
// lists the aborted transactions; ListOffsets latest answers the LSO; a
// restart keeps the ongoing transactions, the aborted-transaction index and
// the LSO.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "broker/api/broker_test_fixture.h"
#include "broker/base/kafka_error.h"
#include "headrace/broker.h"
#include "headrace/record_batch.h"
#include "log/testing.h"

namespace headrace {
namespace {

using broker::Code;
using broker::KafkaError;
using namespace protocol;  // message structs

std::string TxnBatch(int64_t pid, int16_t epoch, int32_t seq, int records) {
  std::vector<RecordInput> in;
  for (int i = 0; i < records; ++i) {
    in.push_back({std::nullopt, "t" + std::to_string(i), {}, TimestampMs(1000 + i)});
  }
  BatchProducerFields f;
  f.producer_id = pid;
  f.producer_epoch = epoch;
  f.base_sequence = seq;
  f.transactional = true;
  return BuildBatch(in, f);
}

class TxnDataE2ETest : public testing::BrokerFixture {
 protected:
  // Produces with acks=all, retrying while the topic is auto-created.
  ProduceResponse::PartitionProduceResponse Produce(const std::string& topic, std::string batch) {
    auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (;;) {
      ProduceRequest req;
      req.acks = -1;
      req.timeout_ms = 5000;
      auto& t = req.topic_data.emplace_back();
      t.name = topic;
      t.partition_data.push_back({0, Records::FromBytes(batch)});
      auto resp = Call<ProduceResponse>(req, 9);
      if (resp.responses.size() != 1 || resp.responses[0].partition_responses.size() != 1) {
        ADD_FAILURE() << "produce response has the wrong shape";
        return {};
      }
      auto r = resp.responses[0].partition_responses[0];
      if (r.error_code != Code(KafkaError::kLeaderNotAvailable) ||
          std::chrono::steady_clock::now() > give_up) {
        return r;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  // One marker over `topic` partitions `partitions`; the error per partition.
  std::vector<int16_t> WriteMarker(int64_t pid, int16_t epoch, bool commit,
                                   const std::string& topic, std::vector<int32_t> partitions,
                                   int16_t version = 1) {
    WriteTxnMarkersRequest req;
    auto& m = req.markers.emplace_back();
    m.producer_id = pid;
    m.producer_epoch = epoch;
    m.transaction_result = commit;
    m.coordinator_epoch = 0;
    m.topics.push_back({topic, partitions});
    auto resp = Call<WriteTxnMarkersResponse>(req, version);
    std::vector<int16_t> errors;
    if (resp.markers.size() != 1 || resp.markers[0].topics.size() != 1) {
      ADD_FAILURE() << "WriteTxnMarkers response has the wrong shape";
      return errors;
    }
    EXPECT_EQ(resp.markers[0].producer_id, pid);
    for (const auto& p : resp.markers[0].topics[0].partitions) errors.push_back(p.error_code);
    return errors;
  }
  FetchResponse::PartitionData Fetch(const std::string& topic, int64_t offset, int8_t isolation) {
    FetchRequest req;
    req.max_wait_ms = 0;
    req.min_bytes = 1;
    req.isolation_level = isolation;
    auto& t = req.topics.emplace_back();
    t.topic = topic;
    auto& p = t.partitions.emplace_back();
    p.partition = 0;
    p.fetch_offset = offset;
    p.partition_max_bytes = 1 << 20;
    auto resp = Call<FetchResponse>(req, 12);
    if (resp.responses.size() != 1 || resp.responses[0].partitions.size() != 1) {
      ADD_FAILURE() << "fetch response has the wrong shape";
      return {};
    }
    auto records = DecodeRecords(resp.responses[0].partitions[0].records.data);
    fetched_records_ = records.ok() ? records->size() : 0;
    return resp.responses[0].partitions[0];
  }
  int64_t Latest(const std::string& topic, int8_t isolation) {
    ListOffsetsRequest req;
    req.replica_id = -1;
    req.isolation_level = isolation;
    auto& t = req.topics.emplace_back();
    t.name = topic;
    t.partitions.push_back({.partition_index = 0, .timestamp = -1});
    auto resp = Call<ListOffsetsResponse>(req, 7);
    if (resp.topics.size() != 1 || resp.topics[0].partitions.size() != 1) {
      ADD_FAILURE() << "list offsets response has the wrong shape";
      return -2;
    }
    return resp.topics[0].partitions[0].offset;
  }
  // The data records (control batches skipped) of the last Fetch.
  size_t RecordCount(const FetchResponse::PartitionData&) const { return fetched_records_; }
  size_t fetched_records_ = 0;
};

TEST_F(TxnDataE2ETest, CommitMakesTransactionalRecordsVisibleToReadCommitted) {
  ASSERT_EQ(Produce("tx", TxnBatch(1000, 0, 0, 3)).error_code, 0);  // 0-2
  auto open = Fetch("tx", 0, 1);
  EXPECT_EQ(open.error_code, 0);
  EXPECT_EQ(open.high_watermark, 3);
  EXPECT_EQ(open.last_stable_offset, 0);
  EXPECT_EQ(RecordCount(open), 0u);
  ASSERT_TRUE(open.aborted_transactions.has_value());
  EXPECT_TRUE(open.aborted_transactions->empty());
  EXPECT_EQ(Latest("tx", 1), 0);
  EXPECT_EQ(Latest("tx", 0), 3);
  EXPECT_EQ(RecordCount(Fetch("tx", 0, 0)), 3u);  // read_uncommitted sees them

  EXPECT_EQ(WriteMarker(1000, 0, true, "tx", {0}), std::vector<int16_t>{0});  // marker at 3
  auto committed = Fetch("tx", 0, 1);
  EXPECT_EQ(committed.high_watermark, 4);
  EXPECT_EQ(committed.last_stable_offset, 4);
  EXPECT_EQ(RecordCount(committed), 3u);  // the marker is a control batch
  EXPECT_TRUE(committed.aborted_transactions->empty());
  EXPECT_EQ(Latest("tx", 1), 4);
}

TEST_F(TxnDataE2ETest, AbortIsListedInReadCommittedFetchesAndSurvivesARestart) {
  ASSERT_EQ(Produce("ab", TxnBatch(2000, 1, 0, 2)).error_code, 0);  // 0-1
  EXPECT_EQ(WriteMarker(2000, 1, false, "ab", {0}, 0), std::vector<int16_t>{0});  // 2
  ASSERT_EQ(Produce("ab", TxnBatch(3000, 0, 0, 1)).error_code, 0);  // 3, stays open
  auto read = Fetch("ab", 0, 1);
  EXPECT_EQ(read.last_stable_offset, 3);
  ASSERT_TRUE(read.aborted_transactions.has_value());
  ASSERT_EQ(read.aborted_transactions->size(), 1u);
  EXPECT_EQ((*read.aborted_transactions)[0].producer_id, 2000);
  EXPECT_EQ((*read.aborted_transactions)[0].first_offset, 0);
  EXPECT_FALSE(Fetch("ab", 0, 0).aborted_transactions.has_value());  // read_uncommitted

  RestartBroker();
  auto again = Fetch("ab", 0, 1);
  EXPECT_EQ(again.high_watermark, 4);
  EXPECT_EQ(again.last_stable_offset, 3);  // producer 3000's transaction is still open
  ASSERT_TRUE(again.aborted_transactions.has_value());
  ASSERT_EQ(again.aborted_transactions->size(), 1u);
  EXPECT_EQ((*again.aborted_transactions)[0].producer_id, 2000);
  EXPECT_EQ(Latest("ab", 1), 3);
  EXPECT_EQ(WriteMarker(3000, 0, true, "ab", {0}), std::vector<int16_t>{0});
  EXPECT_EQ(Latest("ab", 1), 5);
}

TEST_F(TxnDataE2ETest, MarkerErrorsArePerPartition) {
  ASSERT_EQ(Produce("me", TxnBatch(4000, 3, 0, 1)).error_code, 0);
  // Partition 5 does not exist; an old producer epoch is fenced.
  EXPECT_EQ(WriteMarker(4000, 3, true, "me", {0, 5}),
            (std::vector<int16_t>{0, Code(KafkaError::kUnknownTopicOrPartition)}));
  EXPECT_EQ(WriteMarker(4000, 2, false, "me", {0}),
            std::vector<int16_t>{Code(KafkaError::kInvalidProducerEpoch)});
  // __consumer_offsets goes to the group coordinator's CompleteTxn (NONE),
  // or NOT_COORDINATOR when this broker does not run it.
  auto groups = WriteMarker(4000, 3, true, "__consumer_offsets", {0});
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_TRUE(groups[0] == 0 || groups[0] == Code(KafkaError::kNotCoordinator));
}

TEST_F(TxnDataE2ETest, DescribeProducersListsTheOpenTransaction) {
  ASSERT_EQ(Produce("dp", TxnBatch(5000, 2, 0, 2)).error_code, 0);  // 0-1
  DescribeProducersRequest req;
  req.topics.push_back({"dp", {0, 9}});
  auto resp = Call<DescribeProducersResponse>(req, 0);
  ASSERT_EQ(resp.topics.size(), 1u);
  ASSERT_EQ(resp.topics[0].partitions.size(), 2u);
  const auto& p0 = resp.topics[0].partitions[0];
  EXPECT_EQ(p0.error_code, 0);
  ASSERT_EQ(p0.active_producers.size(), 1u);
  EXPECT_EQ(p0.active_producers[0].producer_id, 5000);
  EXPECT_EQ(p0.active_producers[0].producer_epoch, 2);
  EXPECT_EQ(p0.active_producers[0].last_sequence, 1);
  EXPECT_EQ(p0.active_producers[0].last_timestamp, 1001);
  EXPECT_EQ(p0.active_producers[0].current_txn_start_offset, 0);
  EXPECT_EQ(resp.topics[0].partitions[1].error_code, Code(KafkaError::kUnknownTopicOrPartition));
}

}  // namespace
}  // namespace headrace
