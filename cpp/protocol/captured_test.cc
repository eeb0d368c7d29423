// Request frames captured from real clients (testdata/README.md) decode and
// re-encode byte-identically, and their decoded values are the ones sent.
#include <gtest/gtest.h>

#include <dirent.h>

#include <algorithm>
#include <fstream>
#include <map>

#include "protocol/codec.h"
#include "protocol/test_util.h"

namespace headrace::protocol {
namespace {

using testing::FromHex;

std::map<std::string, std::vector<uint8_t>> LoadCaptures() {
  std::map<std::string, std::vector<uint8_t>> out;
  DIR* d = opendir(HR_PROTOCOL_TESTDATA);
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.size() < 5 || name.substr(name.size() - 4) != ".hex") continue;
    std::ifstream in(std::string(HR_PROTOCOL_TESTDATA) + "/" + name);
    std::string hex((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    out[name] = FromHex(hex);
  }
  closedir(d);
  return out;
}

TEST(CapturedTest, EveryCapturedFrameReencodesByteIdentical) {
  auto captures = LoadCaptures();
  ASSERT_GE(captures.size(), 40u);
  for (auto& [name, frame] : captures) {
    std::string original(frame.begin(), frame.end());
    auto again = testing::ReencodeRequest(frame);
    ASSERT_TRUE(again.ok()) << name << ": " << again.status().ToString();
    EXPECT_EQ(testing::ToHex(*again), testing::ToHex(original)) << name;
  }
}

TEST(CapturedTest, CoversFlexibleAndClassicVersionsOfTheCoreApis) {
  auto captures = LoadCaptures();
  for (const char* want : {"ck_Produce_v10", "kcat_Produce_v7", "kp_Produce_v9", "aio_Produce_v7",
                           "ck_Fetch_v16", "kcat_Fetch_v11", "kp_Fetch_v12", "ck_Metadata_v12",
                           "aio_Metadata_v5", "kcat_ApiVersions_v3", "aio_ApiVersions_v0",
                           "kp_ListOffsets_v9", "kcat_ListOffsets_v2", "kp_FindCoordinator_v6",
                           "ck_FindCoordinator_v2", "kp_JoinGroup_v7", "ck_JoinGroup_v5",
                           "kp_OffsetCommit_v8", "aio_OffsetCommit_v3", "ck_OffsetCommit_v9"}) {
    EXPECT_TRUE(captures.count(std::string(want) + ".hex")) << want;
  }
}

template <typename M>
M DecodeBody(std::vector<uint8_t>& frame, RequestHeader* h) {
  Reader r(frame);
  EXPECT_TRUE(DecodeRequestHeader(r, h).ok());
  M m;
  Status st = m.Decode(r, h->request_api_version);
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(r.remaining(), 0u);
  return m;
}

TEST(CapturedTest, FlexibleProduceFromLibrdkafkaHasRecordsIntoTheFrame) {
  auto captures = LoadCaptures();
  auto& frame = captures["ck_Produce_v10.hex"];
  RequestHeader h;
  auto req = DecodeBody<ProduceRequest>(frame, &h);
  EXPECT_EQ(h.request_api_key, 0);
  EXPECT_EQ(h.request_api_version, 10);
  EXPECT_EQ(h.client_id, "ck-producer");
  EXPECT_EQ(req.acks, -1);
  ASSERT_EQ(req.topic_data.size(), 1u);
  EXPECT_EQ(req.topic_data[0].name, "t1");
  const Records& rec = req.topic_data[0].partition_data[0].records;
  ASSERT_GE(rec.data.size(), 61u);
  EXPECT_GE(rec.data.data(), frame.data());
  EXPECT_LE(rec.data.data() + rec.data.size(), frame.data() + frame.size());
  EXPECT_EQ(rec.data[16], 2);  // RecordBatch magic v2
}

TEST(CapturedTest, ClassicProduceFromKcatAndHeaderV1) {
  auto captures = LoadCaptures();
  RequestHeader h;
  auto req = DecodeBody<ProduceRequest>(captures["kcat_Produce_v7.hex"], &h);
  EXPECT_EQ(RequestHeaderVersion(0, 7), 1);
  EXPECT_EQ(h.client_id, "rdkafka");
  EXPECT_EQ(req.topic_data.at(0).name, "t1");
  EXPECT_FALSE(req.topic_data[0].partition_data.at(0).records.data.empty());
}

TEST(CapturedTest, FetchV16UsesTopicIdsAndV11UsesNames) {
  auto captures = LoadCaptures();
  RequestHeader h;
  auto f16 = DecodeBody<FetchRequest>(captures["ck_Fetch_v16.hex"], &h);
  ASSERT_EQ(f16.topics.size(), 1u);
  EXPECT_FALSE(f16.topics[0].topic_id.is_zero());
  EXPECT_TRUE(f16.topics[0].topic.empty());
  auto f11 = DecodeBody<FetchRequest>(captures["kcat_Fetch_v11.hex"], &h);
  EXPECT_EQ(f11.topics.at(0).topic, "t1");
  EXPECT_EQ(f11.topics[0].partitions.at(0).partition, 0);
}

TEST(CapturedTest, JoinGroupAndOffsetCommitAcrossTheFlexibleSplit) {
  auto captures = LoadCaptures();
  RequestHeader h;
  auto j7 = DecodeBody<JoinGroupRequest>(captures["kp_JoinGroup_v7.hex"], &h);
  EXPECT_EQ(j7.protocol_type, "consumer");
  EXPECT_FALSE(j7.protocols.empty());
  auto j5 = DecodeBody<JoinGroupRequest>(captures["ck_JoinGroup_v5.hex"], &h);
  EXPECT_EQ(j5.protocol_type, "consumer");
  auto c3 = DecodeBody<OffsetCommitRequest>(captures["aio_OffsetCommit_v3.hex"], &h);
  EXPECT_EQ(c3.topics.at(0).name, "t1");
  auto c9 = DecodeBody<OffsetCommitRequest>(captures["ck_OffsetCommit_v9.hex"], &h);
  EXPECT_EQ(c9.topics.at(0).name, "t1");
  EXPECT_GT(c9.topics[0].partitions.at(0).committed_offset, 0);
}

}  // namespace
}  // namespace headrace::protocol
