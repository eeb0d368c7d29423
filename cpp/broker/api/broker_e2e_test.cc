// End to end: a real headrace::Broker on 127.0.0.1:0 in a temp dir, spoken
// to over a TCP socket with requests the codec encodes. Covers the data
// path: Metadata (auto-create, ids), Produce (acks 0/1/all, errors), Fetch
// (exact bytes, limits, long poll, errors), ListOffsets, and restart.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
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
using testing::KafkaTestClient;
using testing::TempDir;

class BrokerE2ETest : public testing::BrokerFixture {
 protected:
  MetadataResponse MetadataOnce(const std::string& topic, int16_t version = 12) {
    MetadataRequest req;
    req.topics->push_back({.topic_id = {}, .name = topic});
    return Call<MetadataResponse>(req, version);
  }
  // As a client does: asks again while the topic is being auto-created.
  MetadataResponse Metadata(const std::string& topic, int16_t version = 12) {
    auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (;;) {
      MetadataResponse md = MetadataOnce(topic, version);
      if (md.topics.size() != 1 || md.topics[0].error_code != Code(KafkaError::kLeaderNotAvailable) ||
          std::chrono::steady_clock::now() > give_up) {
        return md;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  static ProduceRequest ProduceOf(const std::string& topic, int32_t partition, std::string batch,
                                  int16_t acks) {
    ProduceRequest req;
    req.acks = acks;
    req.timeout_ms = 5000;
    auto& t = req.topic_data.emplace_back();
    t.name = topic;
    t.partition_data.push_back({partition, Records::FromBytes(std::move(batch))});
    return req;
  }
  // Retries while the topic is being auto-created (LEADER_NOT_AVAILABLE).
  ProduceResponse::PartitionProduceResponse Produce(const std::string& topic, std::string batch,
                                                    int16_t acks = -1, int16_t version = 9,
                                                    int32_t partition = 0) {
    auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (;;) {
      auto resp = Call<ProduceResponse>(ProduceOf(topic, partition, batch, acks), version);
      if (resp.responses.size() != 1 || resp.responses[0].partition_responses.size() != 1) {
        ADD_FAILURE() << "produce response has the wrong shape";
        return {};
      }
      auto& r = resp.responses[0].partition_responses[0];
      if (r.error_code != Code(KafkaError::kLeaderNotAvailable) ||
          std::chrono::steady_clock::now() > give_up) {
        return r;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  static FetchRequest FetchOf(const std::string& topic, const Uuid& id, int64_t offset,
                              int32_t max_wait_ms = 0, int32_t partition_max_bytes = 1 << 20) {
    FetchRequest req;
    req.max_wait_ms = max_wait_ms;
    req.min_bytes = 1;
    auto& t = req.topics.emplace_back();
    t.topic = topic;
    t.topic_id = id;
    auto& p = t.partitions.emplace_back();
    p.partition = 0;
    p.fetch_offset = offset;
    p.partition_max_bytes = partition_max_bytes;
    return req;
  }
  FetchResponse::PartitionData FetchOne(const FetchRequest& req, int16_t version) {
    auto resp = Call<FetchResponse>(req, version);
    if (resp.responses.size() != 1 || resp.responses[0].partitions.size() != 1) {
      ADD_FAILURE() << "fetch response has the wrong shape";
      return {};
    }
    return resp.responses[0].partitions[0];
  }

  ListOffsetsResponse::ListOffsetsPartitionResponse ListOffset(const std::string& topic,
                                                               int64_t timestamp,
                                                               int16_t version = 7) {
    ListOffsetsRequest req;
    req.replica_id = -1;
    auto& t = req.topics.emplace_back();
    t.name = topic;
    t.partitions.push_back({.partition_index = 0, .timestamp = timestamp});
    auto resp = Call<ListOffsetsResponse>(req, version);
    if (resp.topics.size() != 1 || resp.topics[0].partitions.size() != 1) {
      ADD_FAILURE() << "list offsets response has the wrong shape";
      return {};
    }
    return resp.topics[0].partitions[0];
  }

  Uuid TopicId(const std::string& topic) {
    auto md = Metadata(topic);
    return md.topics.empty() ? Uuid{} : md.topics[0].topic_id;
  }
};

// What a produced batch looks like in the log: base offset assigned and the
// leader epoch (0) stamped; nothing else changes.
std::string Stored(std::string batch, int64_t base_offset) {
  std::span<uint8_t> bytes(reinterpret_cast<uint8_t*>(batch.data()), batch.size());
  SetBaseOffset(bytes, Offset(base_offset));
  SetPartitionLeaderEpoch(bytes, LeaderEpoch(0));
  return batch;
}

std::string RecordBytes(const Records& r) {
  return std::string(reinterpret_cast<const char*>(r.data.data()), r.data.size());
}

std::string Batch(int records, int64_t ts = 1000) { return testing::MakeBatch(records, 10, ts); }

TEST_F(BrokerE2ETest, MetadataAutoCreatesTopicAndDescribesThisBroker) {
  // The creation runs on the admin worker: the first answer is usually
  // LEADER_NOT_AVAILABLE (retriable), as Kafka's.
  auto first = MetadataOnce("auto-t");
  ASSERT_EQ(first.topics.size(), 1u);
  EXPECT_TRUE(first.topics[0].error_code == Code(KafkaError::kLeaderNotAvailable) ||
              first.topics[0].error_code == 0);
  auto md = Metadata("auto-t");
  ASSERT_EQ(md.brokers.size(), 1u);
  EXPECT_EQ(md.brokers[0].node_id, 0);
  EXPECT_EQ(md.brokers[0].host, "127.0.0.1");
  EXPECT_EQ(md.brokers[0].port, port_);
  EXPECT_EQ(md.controller_id, 0);
  ASSERT_TRUE(md.cluster_id.has_value());
  EXPECT_EQ(*md.cluster_id, broker_->cluster_id());
  ASSERT_EQ(md.topics.size(), 1u);
  const auto& t = md.topics[0];
  EXPECT_EQ(t.error_code, 0);
  EXPECT_EQ(t.name, "auto-t");
  EXPECT_FALSE(t.topic_id.is_zero());
  EXPECT_EQ(t.topic_authorized_operations, INT32_MIN);
  ASSERT_EQ(t.partitions.size(), 1u);
  EXPECT_EQ(t.partitions[0].leader_id, 0);
  EXPECT_EQ(t.partitions[0].leader_epoch, 0);
  EXPECT_EQ(t.partitions[0].replica_nodes, std::vector<int32_t>{0});
  EXPECT_EQ(t.partitions[0].isr_nodes, std::vector<int32_t>{0});
  EXPECT_TRUE(t.partitions[0].offline_replicas.empty());

  // v1 null topics = all topics; v0 empty = all topics.
  MetadataRequest all;
  all.topics.reset();
  // The coordinators' logs are listed too, as internal topics.
  auto listed = Call<MetadataResponse>(all, 1);
  ASSERT_EQ(listed.topics.size(), 4u);
  EXPECT_EQ(listed.topics[0].name, "__consumer_offsets");
  EXPECT_TRUE(listed.topics[0].is_internal);
  EXPECT_EQ(listed.topics[1].name, "__share_group_state");
  EXPECT_TRUE(listed.topics[1].is_internal);
  EXPECT_EQ(listed.topics[2].name, "__transaction_state");
  EXPECT_EQ(listed.topics[3].name, "auto-t");
  EXPECT_FALSE(listed.topics[3].is_internal);
  MetadataRequest v0;
  EXPECT_EQ(Call<MetadataResponse>(v0, 0).topics.size(), 4u);
  // v1+ empty = no topics.
  EXPECT_TRUE(Call<MetadataResponse>(v0, 4).topics.empty());

  // v12 by id with a null name.
  MetadataRequest by_id;
  by_id.topics->push_back({.topic_id = t.topic_id, .name = std::nullopt});
  Uuid unknown;
  unknown.bytes[3] = 7;
  by_id.topics->push_back({.topic_id = unknown, .name = std::nullopt});
  auto ids = Call<MetadataResponse>(by_id, 12);
  ASSERT_EQ(ids.topics.size(), 2u);
  EXPECT_EQ(ids.topics[0].name, "auto-t");
  EXPECT_EQ(ids.topics[0].partitions.size(), 1u);
  EXPECT_EQ(ids.topics[1].error_code, Code(KafkaError::kUnknownTopicId));
  EXPECT_FALSE(ids.topics[1].name.has_value());
}

TEST_F(BrokerE2ETest, MetadataWithoutAutoCreateReportsUnknownAndInvalidTopics) {
  MetadataRequest req;
  req.allow_auto_topic_creation = false;
  req.include_topic_authorized_operations = true;
  req.topics->push_back({.topic_id = {}, .name = "absent"});
  req.topics->push_back({.topic_id = {}, .name = "bad/name"});
  auto md = Call<MetadataResponse>(req, 9);
  ASSERT_EQ(md.topics.size(), 2u);
  EXPECT_EQ(md.topics[0].error_code, Code(KafkaError::kUnknownTopicOrPartition));
  EXPECT_EQ(md.topics[1].error_code, Code(KafkaError::kInvalidTopicException));
  // With auto-create allowed, an invalid name is still invalid.
  EXPECT_EQ(Metadata("bad/name").topics[0].error_code, Code(KafkaError::kInvalidTopicException));
  EXPECT_EQ(Metadata("absent", 4).topics[0].error_code, 0);
}

TEST_F(BrokerE2ETest, ProduceWithAcksOneAndAllReturnsConsecutiveBaseOffsets) {
  auto r1 = Produce("p", Batch(3), /*acks=*/1, /*version=*/9);
  EXPECT_EQ(r1.error_code, 0) << r1.error_message.value_or("");
  EXPECT_EQ(r1.base_offset, 0);
  EXPECT_EQ(r1.log_append_time_ms, -1);
  EXPECT_EQ(r1.log_start_offset, 0);
  auto r2 = Produce("p", Batch(2), /*acks=*/-1, /*version=*/10);
  EXPECT_EQ(r2.error_code, 0);
  EXPECT_EQ(r2.base_offset, 3);
  auto r3 = Produce("p", Batch(1), /*acks=*/-1, /*version=*/3);
  EXPECT_EQ(r3.error_code, 0);
  EXPECT_EQ(r3.base_offset, 5);
  EXPECT_EQ(ListOffset("p", -1).offset, 6);
}

TEST_F(BrokerE2ETest, ProduceWithAcksAllAndNoFsyncAnswersAfterAppend) {
  client_.reset();
  ASSERT_TRUE(broker_->Stop().ok());
  StartBroker({{"headrace.acks.all.fsync", "false"}});
  EXPECT_EQ(Produce("nf", Batch(2), -1).base_offset, 0);
  EXPECT_EQ(Produce("nf", Batch(2), -1).base_offset, 2);
}

TEST_F(BrokerE2ETest, ProduceReportsPerPartitionErrors) {
  Metadata("e");
  EXPECT_EQ(Produce("e", Batch(1), 1, 9, /*partition=*/5).error_code,
            Code(KafkaError::kUnknownTopicOrPartition));
  EXPECT_EQ(Produce("e", Batch(1), 1, 9, /*partition=*/-1).error_code,
            Code(KafkaError::kUnknownTopicOrPartition));
  std::string corrupt = Batch(2);
  corrupt.back() ^= 0x5a;  // breaks the CRC
  auto bad = Produce("e", corrupt);
  EXPECT_EQ(bad.error_code, Code(KafkaError::kCorruptMessage));
  EXPECT_EQ(bad.base_offset, -1);
  EXPECT_TRUE(bad.error_message.has_value());
  EXPECT_EQ(Produce("e", "", 1).error_code, Code(KafkaError::kInvalidRecord));
  EXPECT_EQ(Produce("e", Batch(1), /*acks=*/2).error_code, Code(KafkaError::kInvalidRequiredAcks));
  EXPECT_EQ(Produce("bad/name", Batch(1)).error_code, Code(KafkaError::kInvalidTopicException));
  // v0-2 carry format v0/v1 only: a v2 batch in them is an invalid record.
  EXPECT_EQ(Produce("e", Batch(1), 1, /*version=*/2).error_code, Code(KafkaError::kInvalidRecord));
  std::string bad_v0 = testing::LegacyEntry(0, 0, "k", "v");
  bad_v0.back() ^= 0x5a;  // breaks its CRC-32
  EXPECT_EQ(Produce("e", bad_v0, 1, /*version=*/1).error_code, Code(KafkaError::kInvalidRecord));
  // Nothing above was appended.
  EXPECT_EQ(ListOffset("e", -1).offset, 0);
  // A format v0 message set (Produce v1, as a 0.9 client sends it) is
  // up-converted and appended.
  std::string v0 = testing::LegacyEntry(0, 0, "k0", "v0") + testing::LegacyEntry(0, 1, "k1", "v1");
  auto ok = Produce("e", v0, /*acks=*/-1, /*version=*/1);  // answered once committed
  EXPECT_EQ(ok.error_code, 0);
  EXPECT_EQ(ok.base_offset, 0);
  EXPECT_EQ(ListOffset("e", -1).offset, 2);
}

TEST_F(BrokerE2ETest, ProduceWithAcksZeroSendsNoResponse) {
  Metadata("z");  // auto-created first: acks=0 gets no retriable error back
  client_->Send(ProduceOf("z", 0, Batch(4), /*acks=*/0), 9);
  // The next response on the connection answers the next request.
  auto md = Metadata("z");
  ASSERT_EQ(md.topics.size(), 1u);
  // The append happened before the metadata request was handled; it is
  // committed (visible) once the flusher has fsynced it.
  EXPECT_EQ(FetchOne(FetchOf("z", Uuid(), 0, /*max_wait_ms=*/5000), 11).high_watermark, 4);
}

TEST_F(BrokerE2ETest, ProduceWithAcksZeroClosesTheConnectionOnError) {
  std::string corrupt = Batch(2);
  corrupt.back() ^= 1;
  client_->Send(ProduceOf("z0", 0, corrupt, /*acks=*/0), 9);
  EXPECT_TRUE(client_->PeerClosed());
}

TEST_F(BrokerE2ETest, FetchReturnsExactlyTheProducedBatches) {
  std::string b1 = Batch(3, 1000), b2 = Batch(2, 2000);
  ASSERT_EQ(Produce("f", b1).base_offset, 0);
  ASSERT_EQ(Produce("f", b2).base_offset, 3);
  const std::string expected = Stored(b1, 0) + Stored(b2, 3);
  Uuid id = TopicId("f");
  for (int16_t v : {4, 11, 12, 13, 16}) {
    SCOPED_TRACE("fetch v" + std::to_string(v));
    auto p = FetchOne(FetchOf("f", id, 0), v);
    EXPECT_EQ(p.error_code, 0);
    EXPECT_EQ(p.high_watermark, 5);
    EXPECT_EQ(p.last_stable_offset, 5);
    if (v >= 5) {
      EXPECT_EQ(p.log_start_offset, 0);
    }
    if (v >= 11) {
      EXPECT_EQ(p.preferred_read_replica, -1);
    }
    EXPECT_FALSE(p.aborted_transactions.has_value());
    EXPECT_EQ(RecordBytes(p.records), expected);
  }
  // From the middle of the first batch: whole batches from the one holding it.
  EXPECT_EQ(RecordBytes(FetchOne(FetchOf("f", id, 1), 12).records), expected);
  EXPECT_EQ(RecordBytes(FetchOne(FetchOf("f", id, 3), 12).records), Stored(b2, 3));
  // At the high watermark: nothing, no error.
  auto at_end = FetchOne(FetchOf("f", id, 5), 12);
  EXPECT_EQ(at_end.error_code, 0);
  EXPECT_EQ(at_end.records.size(), 0);
  // partition_max_bytes below the first batch: still that one whole batch.
  EXPECT_EQ(RecordBytes(FetchOne(FetchOf("f", id, 0, 0, 10), 12).records), Stored(b1, 0));
  // read_committed: bounded by the LSO (== HW) and an empty aborted list.
  FetchRequest committed = FetchOf("f", id, 0);
  committed.isolation_level = 1;
  auto c = FetchOne(committed, 12);
  EXPECT_EQ(RecordBytes(c.records), expected);
  ASSERT_TRUE(c.aborted_transactions.has_value());
  EXPECT_TRUE(c.aborted_transactions->empty());
}

// The transmit layer copies answers with up to 16 KiB of records and sends
// larger ones from the segment file. A client sees the same bytes either way.
TEST_F(BrokerE2ETest, FetchReturnsTheSameBytesCopiedOrSentFromTheFile) {
  std::string small = testing::MakeBatch(2, 100, 1000);
  std::string big1 = testing::MakeBatch(3, 6000, 2000), big2 = testing::MakeBatch(3, 6000, 3000);
  ASSERT_EQ(Produce("cp", small).base_offset, 0);
  ASSERT_EQ(Produce("cp", big1).base_offset, 2);
  ASSERT_EQ(Produce("cp", big2).base_offset, 5);
  Uuid id = TopicId("cp");
  for (int16_t v : {4, 12, 16}) {
    SCOPED_TRACE("fetch v" + std::to_string(v));
    // 1 batch of ~0.3 KB (copied), 2 of ~18 KB (file), all three (file).
    EXPECT_EQ(RecordBytes(FetchOne(FetchOf("cp", id, 0, 0, 10), v).records), Stored(small, 0));
    EXPECT_EQ(RecordBytes(FetchOne(FetchOf("cp", id, 2), v).records),
              Stored(big1, 2) + Stored(big2, 5));
    EXPECT_EQ(RecordBytes(FetchOne(FetchOf("cp", id, 0), v).records),
              Stored(small, 0) + Stored(big1, 2) + Stored(big2, 5));
  }
}

// A large fetch of data whose pages were dropped from the page cache (read
// into it off the I/O thread before it is sent), small requests pipelined
// behind it, and requests on a second connection of the same I/O thread
// meanwhile: every answer arrives, in order, with exact bytes.
TEST_F(BrokerE2ETest, ALargeFetchOfEvictedDataAndSmallRequestsInterleave) {
  client_.reset();
  ASSERT_TRUE(broker_->Stop().ok());
  broker_.reset();
  StartBroker({{"num.io.threads", "1"}});
  std::string expected;
  for (int b = 0; b < 3; ++b) {
    std::string batch = testing::MakeBatch(4, 250000, 1000 + b);
    ASSERT_EQ(Produce("cold", batch, /*acks=*/-1).base_offset, 4 * b);  // flushed: evictable
    expected += Stored(batch, 4 * b);
  }
  std::string small = Batch(2);
  ASSERT_EQ(Produce("cold", small, -1).base_offset, 12);
  Uuid id = TopicId("cold");
  for (const auto& f : std::filesystem::recursive_directory_iterator(dir_.path())) {
    if (f.path().extension() != ".log") continue;
    int fd = ::open(f.path().c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
  int32_t big = client_->Send(FetchOf("cold", id, 0, 0, 16 << 20), 12);
  int32_t meta = client_->Send(MetadataRequest{}, 12);
  int32_t tail = client_->Send(FetchOf("cold", id, 12), 12);
  KafkaTestClient other(port_);
  std::string error;
  for (int i = 0; i < 3; ++i) {
    auto resp = other.Call<FetchResponse>(FetchOf("cold", id, 12), 12, &error);
    ASSERT_TRUE(resp.has_value()) << error;
    EXPECT_EQ(RecordBytes(resp->responses[0].partitions[0].records), Stored(small, 12));
  }
  auto got = client_->Receive<FetchResponse>(big, 12, &error);
  ASSERT_TRUE(got.has_value()) << error;
  EXPECT_TRUE(RecordBytes(got->responses[0].partitions[0].records) == expected + Stored(small, 12));
  ASSERT_TRUE(client_->Receive<MetadataResponse>(meta, 12, &error).has_value()) << error;
  auto last = client_->Receive<FetchResponse>(tail, 12, &error);
  ASSERT_TRUE(last.has_value()) << error;
  EXPECT_EQ(RecordBytes(last->responses[0].partitions[0].records), Stored(small, 12));
}

TEST_F(BrokerE2ETest, FetchRespectsTheResponseMaxBytesAfterTheFirstBatch) {
  std::string b1 = Batch(3), b2 = Batch(3);
  Produce("mb", b1);
  Produce("mb", b2);
  FetchRequest req = FetchOf("mb", {}, 0);
  req.max_bytes = static_cast<int32_t>(b1.size() + 10);
  EXPECT_EQ(RecordBytes(FetchOne(req, 11).records), Stored(b1, 0));
  req.max_bytes = 1;  // the first batch still gets through
  EXPECT_EQ(RecordBytes(FetchOne(req, 11).records), Stored(b1, 0));
}

TEST_F(BrokerE2ETest, FetchReportsOffsetOutOfRangeAndUnknownPartitions) {
  Produce("oor", Batch(2));
  Uuid id = TopicId("oor");
  auto past = FetchOne(FetchOf("oor", id, 3), 12);
  EXPECT_EQ(past.error_code, Code(KafkaError::kOffsetOutOfRange));
  EXPECT_EQ(past.high_watermark, -1);
  EXPECT_EQ(FetchOne(FetchOf("oor", id, -1), 12).error_code, Code(KafkaError::kOffsetOutOfRange));
  EXPECT_EQ(FetchOne(FetchOf("nope", {}, 0), 12).error_code,
            Code(KafkaError::kUnknownTopicOrPartition));
  Uuid unknown;
  unknown.bytes[0] = 1;
  EXPECT_EQ(FetchOne(FetchOf("", unknown, 0), 13).error_code, Code(KafkaError::kUnknownTopicId));
  FetchRequest bad_partition = FetchOf("oor", id, 0);
  bad_partition.topics[0].partitions[0].partition = 9;
  EXPECT_EQ(FetchOne(bad_partition, 16).error_code, Code(KafkaError::kUnknownTopicOrPartition));
  FetchRequest fenced = FetchOf("oor", id, 0);
  fenced.topics[0].partitions[0].current_leader_epoch = 3;
  EXPECT_EQ(FetchOne(fenced, 12).error_code, Code(KafkaError::kUnknownLeaderEpoch));
}

TEST_F(BrokerE2ETest, LongPollFetchIsWokenByAProduceFromAnotherConnection) {
  Metadata("lp");
  const std::string batch = Batch(2);
  std::thread producer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    KafkaTestClient other(port_);
    std::string error;
    auto resp = other.Call<ProduceResponse>(ProduceOf("lp", 0, batch, 1), 9, &error);
    EXPECT_TRUE(resp.has_value()) << error;
  });
  auto start = std::chrono::steady_clock::now();
  auto p = FetchOne(FetchOf("lp", {}, 0, /*max_wait_ms=*/15000), 12);
  auto waited = std::chrono::steady_clock::now() - start;
  producer.join();
  EXPECT_EQ(p.error_code, 0);
  EXPECT_EQ(RecordBytes(p.records), Stored(batch, 0));
  EXPECT_GE(waited, std::chrono::milliseconds(250));
  EXPECT_LT(waited, std::chrono::seconds(10));
}

TEST_F(BrokerE2ETest, EmptyFetchAnswersAfterMaxWait) {
  Metadata("idle");
  auto start = std::chrono::steady_clock::now();
  auto resp = Call<FetchResponse>(FetchOf("idle", {}, 0, /*max_wait_ms=*/400), 12);
  auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, std::chrono::milliseconds(380));
  EXPECT_LT(waited, std::chrono::seconds(5));
  EXPECT_EQ(resp.session_id, 0);
  EXPECT_EQ(resp.error_code, 0);
  ASSERT_EQ(resp.responses.size(), 1u);
  EXPECT_EQ(resp.responses[0].partitions[0].error_code, 0);
  EXPECT_EQ(resp.responses[0].partitions[0].records.size(), 0);
  // The connection still serves requests in order afterwards.
  EXPECT_EQ(Metadata("idle").topics.size(), 1u);
}

TEST_F(BrokerE2ETest, StopDoesNotWaitForAParkedFetchDeadline) {
  Metadata("parked");
  int32_t id = client_->Send(FetchOf("parked", {}, 0, /*max_wait_ms=*/30000), 12);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(broker_->Stop().ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  broker_.reset();
  // Answered (empty) or the connection closed; either way, not left hanging.
  std::string error;
  auto resp = client_->Receive<FetchResponse>(id, 12, &error);
  if (resp) {
    ASSERT_EQ(resp->responses.size(), 1u);
    EXPECT_EQ(resp->responses[0].partitions[0].records.size(), 0);
  }
}

TEST_F(BrokerE2ETest, ListOffsetsFindsEarliestLatestMaxAndByTime) {
  Produce("lo", Batch(1, 1000));
  Produce("lo", Batch(1, 3000));
  Produce("lo", Batch(1, 2000));
  EXPECT_EQ(ListOffset("lo", -2).offset, 0);
  auto latest = ListOffset("lo", -1);
  EXPECT_EQ(latest.offset, 3);
  EXPECT_EQ(latest.timestamp, -1);
  EXPECT_EQ(latest.leader_epoch, 0);
  auto max = ListOffset("lo", -3, 7);
  EXPECT_EQ(max.offset, 1);
  EXPECT_EQ(max.timestamp, 3000);
  EXPECT_EQ(ListOffset("lo", 1500).offset, 1);
  EXPECT_EQ(ListOffset("lo", 0).offset, 0);
  auto none = ListOffset("lo", 5000);
  EXPECT_EQ(none.error_code, 0);
  EXPECT_EQ(none.offset, -1);
  EXPECT_EQ(none.timestamp, -1);
  EXPECT_EQ(ListOffset("lo", -5, 9).offset, -1);
  EXPECT_EQ(ListOffset("lo", -1, 1).offset, 3);
  EXPECT_EQ(ListOffset("absent", -1).error_code, Code(KafkaError::kUnknownTopicOrPartition));

  ListOffsetsRequest dup;
  auto& t = dup.topics.emplace_back();
  t.name = "lo";
  t.partitions.push_back({.partition_index = 0, .timestamp = -1});
  t.partitions.push_back({.partition_index = 0, .timestamp = -2});
  t.partitions.push_back({.partition_index = 7, .timestamp = -2});
  auto resp = Call<ListOffsetsResponse>(dup, 5);
  ASSERT_EQ(resp.topics.size(), 1u);
  ASSERT_EQ(resp.topics[0].partitions.size(), 3u);
  EXPECT_EQ(resp.topics[0].partitions[0].error_code, Code(KafkaError::kInvalidRequest));
  EXPECT_EQ(resp.topics[0].partitions[1].error_code, Code(KafkaError::kInvalidRequest));
  EXPECT_EQ(resp.topics[0].partitions[2].error_code, Code(KafkaError::kUnknownTopicOrPartition));
}

// One batch compressed with `codec` whose record i has timestamp ts[i].
std::string CompressedBatch(Compression codec, const std::vector<int64_t>& ts) {
  std::vector<RecordInput> in(ts.size());
  for (size_t i = 0; i < ts.size(); ++i) {
    in[i].value = "v" + std::to_string(i);
    in[i].timestamp = TimestampMs(ts[i]);
  }
  std::string plain = BuildBatch(in);
  return ConvertCompression({reinterpret_cast<const uint8_t*>(plain.data()), plain.size()}, codec)
      .value();
}

TEST_F(BrokerE2ETest, ListOffsetsAnswersTheExactRecordInsideCompressedBatches) {
  ASSERT_EQ(Produce("loz", CompressedBatch(Compression::kZstd, {100, 300, 200, 400})).error_code, 0);
  ASSERT_EQ(Produce("loz", CompressedBatch(Compression::kGzip, {500, 700, 700, 600})).error_code, 0);
  struct Case { int64_t asked, offset, timestamp; };
  for (Case c : {Case{0, 0, 100}, Case{150, 1, 300}, Case{300, 1, 300}, Case{350, 3, 400},
                 Case{450, 4, 500}, Case{650, 5, 700}}) {
    auto r = ListOffset("loz", c.asked);
    EXPECT_EQ(r.error_code, 0);
    EXPECT_EQ(r.offset, c.offset) << "asked " << c.asked;
    EXPECT_EQ(r.timestamp, c.timestamp) << "asked " << c.asked;
  }
  auto max = ListOffset("loz", -3, 7);  // the first record carrying the largest timestamp
  EXPECT_EQ(max.offset, 5);
  EXPECT_EQ(max.timestamp, 700);
  EXPECT_EQ(ListOffset("loz", 701).offset, -1);
}

TEST_F(BrokerE2ETest, OffsetForLeaderEpochAnswersFromTheEpochCache) {
  Produce("oe", Batch(3), -1);
  Produce("oe", Batch(2), -1);
  auto ask = [&](int32_t epoch, int32_t current, int16_t version, int32_t partition = 0,
                 const std::string& topic = "oe") {
    OffsetForLeaderEpochRequest req;
    req.replica_id = -1;
    auto& t = req.topics.emplace_back();
    t.topic = topic;
    t.partitions.push_back({.partition = partition, .current_leader_epoch = current,
                            .leader_epoch = epoch});
    auto resp = Call<OffsetForLeaderEpochResponse>(req, version);
    EXPECT_EQ(resp.topics.size(), 1u);
    EXPECT_EQ(resp.topics[0].partitions.size(), 1u);
    return resp.topics[0].partitions[0];
  };
  for (int16_t v : {0, 2, 3, 4}) {
    SCOPED_TRACE("OffsetForLeaderEpoch v" + std::to_string(v));
    auto latest = ask(0, -1, v);  // epoch 0 is the latest: its end is the LEO
    EXPECT_EQ(latest.error_code, 0);
    EXPECT_EQ(latest.end_offset, 5);
    if (v >= 1) {
      EXPECT_EQ(latest.leader_epoch, 0);
    }
  }
  EXPECT_EQ(ask(7, -1, 3).end_offset, -1);  // newer than any epoch: undefined
  EXPECT_EQ(ask(7, -1, 3).leader_epoch, -1);
  EXPECT_EQ(ask(0, 1, 3).error_code, Code(KafkaError::kUnknownLeaderEpoch));
  EXPECT_EQ(ask(0, 0, 3).error_code, 0);
  EXPECT_EQ(ask(0, -1, 3, 4).error_code, Code(KafkaError::kUnknownTopicOrPartition));
  EXPECT_EQ(ask(0, -1, 3, 0, "nope").error_code, Code(KafkaError::kUnknownTopicOrPartition));
}

TEST_F(BrokerE2ETest, MinInsyncReplicasAboveTheIsrRefusesAcksAllOnly) {
  client_.reset();
  ASSERT_TRUE(broker_->Stop().ok());
  StartBroker({{"min.insync.replicas", "2"}});
  auto refused = Produce("mi", Batch(2), -1);
  EXPECT_EQ(refused.error_code, Code(KafkaError::kNotEnoughReplicas));
  EXPECT_EQ(refused.base_offset, -1);
  EXPECT_NE(refused.error_message.value_or("").find("min.insync.replicas is 2"), std::string::npos);
  auto one = Produce("mi", Batch(2), 1);  // acks=1 does not need the ISR
  EXPECT_EQ(one.error_code, 0);
  EXPECT_EQ(one.base_offset, 0);  // the refused batch was not appended
}

TEST_F(BrokerE2ETest, RestartKeepsDataAndTopicIds) {
  std::string b1 = Batch(3), b2 = Batch(4);
  Produce("keep", b1, -1);
  Produce("keep", b2, -1);
  Uuid id = TopicId("keep");
  RestartBroker();
  EXPECT_EQ(TopicId("keep"), id);
  EXPECT_EQ(ListOffset("keep", -1).offset, 7);
  EXPECT_EQ(RecordBytes(FetchOne(FetchOf("keep", id, 0), 16).records),
            Stored(b1, 0) + Stored(b2, 3));
  EXPECT_EQ(Produce("keep", Batch(1)).base_offset, 7);
}

}  // namespace
}  // namespace headrace
