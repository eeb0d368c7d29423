// The share-group schemas pinned from Kafka 4.2 (docs/protocol-codec.md): the API
// table ranges a 4.2 share consumer negotiates against, and the fields that
// exist only from version 2 (KIP-1206 ShareAcquireMode, KIP-1222 renew
// acknowledgements), checked against hand-written frames.
#include <gtest/gtest.h>

#include "protocol/codec.h"
#include "protocol/test_util.h"

namespace headrace::protocol {
namespace {

using testing::EncodeToString;
using testing::FromHex;
using testing::ToHex;

void ExpectRange(int16_t key, const char* name, int16_t min, int16_t max) {
  const ApiInfo* api = FindApi(key);
  ASSERT_NE(api, nullptr) << name;
  EXPECT_STREQ(api->name, name);
  EXPECT_EQ(api->min_version, min) << name;
  EXPECT_EQ(api->max_version, max) << name;
}

TEST(ShareCodecTest, ApiTableHasTheKafka42ShareVersions) {
  ExpectRange(76, "ShareGroupHeartbeat", 1, 1);
  ExpectRange(77, "ShareGroupDescribe", 1, 1);
  ExpectRange(78, "ShareFetch", 1, 2);
  ExpectRange(79, "ShareAcknowledge", 1, 2);
  ExpectRange(90, "DescribeShareGroupOffsets", 0, 0);
  ExpectRange(91, "AlterShareGroupOffsets", 0, 0);
  ExpectRange(92, "DeleteShareGroupOffsets", 0, 0);
  // Version 0 (Kafka 4.0 early access) is gone: a v0 header is Unsupported.
  EXPECT_EQ(RequestHeaderVersion(78, 2), 2);
  EXPECT_EQ(ResponseHeaderVersion(79, 2), 1);
}

// ShareFetch v2: group "g", member "m", epoch 0, MaxWaitMs 500, MinBytes 1,
// MaxBytes 0x7fffffff, MaxRecords 500, BatchSize 500, ShareAcquireMode 1
// (record limit), no topics, no forgotten topics.
constexpr const char* kShareFetchV2 =
    "0267 026d 00000000 000001f4 00000001 7fffffff 000001f4 000001f4 01 01 01 00";

TEST(ShareCodecTest, ShareFetchV2CarriesTheAcquireMode) {
  auto frame = FromHex(kShareFetchV2);
  Reader r(frame);
  ShareFetchRequest req;
  ASSERT_TRUE(req.Decode(r, 2).ok());
  EXPECT_EQ(r.remaining(), 0u);
  EXPECT_EQ(req.group_id, "g");
  EXPECT_EQ(req.member_id, "m");
  EXPECT_EQ(req.max_records, 500);
  EXPECT_EQ(req.batch_size, 500);
  EXPECT_EQ(req.share_acquire_mode, 1);
  EXPECT_EQ(ToHex(EncodeToString(req, 2)), ToHex(std::string(frame.begin(), frame.end())));
  // v1 has no ShareAcquireMode: the same request is one byte shorter.
  EXPECT_EQ(ToHex(EncodeToString(req, 1)),
            ToHex(EncodeToString(req, 2)).erase(2 * 28, 2));
}

TEST(ShareCodecTest, ShareAcknowledgeV2CarriesRenew) {
  // group "g", member "m", epoch 1, IsRenewAck true, one topic (id 0..0f),
  // partition 0, one batch 5..7 with the single type 4 (Renew).
  auto frame = FromHex(
      "0267 026d 00000001 01"
      " 02 000102030405060708090a0b0c0d0e0f"
      "   02 00000000"
      "     02 0000000000000005 0000000000000007 02 04 00"
      "   00"
      " 00"
      " 00");
  Reader r(frame);
  ShareAcknowledgeRequest req;
  ASSERT_TRUE(req.Decode(r, 2).ok());
  EXPECT_EQ(r.remaining(), 0u);
  EXPECT_TRUE(req.is_renew_ack);
  ASSERT_EQ(req.topics.size(), 1u);
  ASSERT_EQ(req.topics[0].partitions.size(), 1u);
  const auto& batch = req.topics[0].partitions[0].acknowledgement_batches.at(0);
  EXPECT_EQ(batch.first_offset, 5);
  EXPECT_EQ(batch.last_offset, 7);
  EXPECT_EQ(batch.acknowledge_types, std::vector<int8_t>{4});
  EXPECT_EQ(ToHex(EncodeToString(req, 2)), ToHex(std::string(frame.begin(), frame.end())));
  // v1 has no IsRenewAck.
  EXPECT_EQ(EncodeToString(req, 1).size() + 1, frame.size());
}

TEST(ShareCodecTest, ShareAcknowledgeResponseV2CarriesTheLockTimeout) {
  ShareAcknowledgeResponse resp;
  resp.acquisition_lock_timeout_ms = 30000;
  // ThrottleTimeMs, ErrorCode, ErrorMessage null, AcquisitionLockTimeoutMs,
  // no responses, no node endpoints, no tags.
  EXPECT_EQ(ToHex(EncodeToString(resp, 2)), "00000000" "0000" "00" "00007530" "01" "01" "00");
  EXPECT_EQ(ToHex(EncodeToString(resp, 1)), "00000000" "0000" "00" "01" "01" "00");
}

TEST(ShareCodecTest, ShareFetchResponseRecordsAreNotNullableFromV1) {
  // Records is nullable only in the removed v0: a null on the wire is an error.
  // One topic (id 0), one partition 0, no errors, leader 0 epoch 0, then the
  // records (compact length + 1: 01 = empty, 00 = null), no acquired records.
  const std::string head =
      "00000000 0000 00 00000000 02 00000000000000000000000000000000 02"
      " 00000000 0000 00 0000 00 00000000 00000000 00";
  const std::string tail = " 01 00 00 01 00";
  for (const char* records : {" 01", " 00"}) {
    auto frame = FromHex(head + records + tail);
    Reader r(frame);
    ShareFetchResponse decoded;
    EXPECT_EQ(decoded.Decode(r, 1).ok(), std::string(records) == " 01") << records;
  }
  ShareFetchResponse resp;
  auto& p = resp.responses.emplace_back().partitions.emplace_back();
  p.records = Records::Null();
  std::string bytes = EncodeToString(resp, 1);
  std::vector<uint8_t> frame(bytes.begin(), bytes.end());
  Reader r(frame);
  ShareFetchResponse back;
  ASSERT_TRUE(back.Decode(r, 1).ok());  // a null is written as empty
  ASSERT_EQ(back.responses.at(0).partitions.size(), 1u);
  EXPECT_FALSE(back.responses[0].partitions[0].records.is_null);
}

}  // namespace
}  // namespace headrace::protocol
