// Header versions, request-header decoding (including unknown keys), the
// tagged-field default rule and response framing.
#include "protocol/codec.h"

#include <gtest/gtest.h>

#include "protocol/test_util.h"

namespace headrace::protocol {
namespace {

using testing::EncodeToString;
using testing::FromHex;
using testing::ToHex;

TEST(CodecTest, ApiTableMatchesTheSchemas) {
  const ApiInfo* produce = FindApi(0);
  ASSERT_NE(produce, nullptr);
  EXPECT_STREQ(produce->name, "Produce");
  EXPECT_EQ(produce->min_version, 0);
  EXPECT_EQ(produce->max_version, 11);
  EXPECT_EQ(produce->flexible_from, 9);
  const ApiInfo* sasl = FindApi(17);
  ASSERT_NE(sasl, nullptr);
  EXPECT_EQ(sasl->flexible_from, -1);
  EXPECT_EQ(FindApi(999), nullptr);
  EXPECT_GT(AllApis().size(), 70u);
  EXPECT_EQ(ProduceRequest::kApiKey, 0);
  EXPECT_TRUE(FetchRequest::IsFlexible(12));
  EXPECT_FALSE(FetchRequest::IsFlexible(11));
}

TEST(CodecTest, HeaderVersionsFollowFlexibility) {
  EXPECT_EQ(RequestHeaderVersion(3, 12), 2);   // Metadata v12 flexible
  EXPECT_EQ(RequestHeaderVersion(3, 8), 1);
  EXPECT_EQ(RequestHeaderVersion(11, 5), 1);   // JoinGroup v5 classic
  EXPECT_EQ(RequestHeaderVersion(18, 3), 2);
  EXPECT_EQ(RequestHeaderVersion(7, 0), 0);    // ControlledShutdown v0
  EXPECT_EQ(ResponseHeaderVersion(3, 12), 1);
  EXPECT_EQ(ResponseHeaderVersion(3, 8), 0);
  EXPECT_EQ(ResponseHeaderVersion(18, 3), 0);  // ApiVersions: always v0
  EXPECT_EQ(ResponseHeaderVersion(18, 4), 0);
}

TEST(CodecTest, RequestHeaderV2KeepsAClassicClientId) {
  // ApiVersions v3: key 18, version 3, correlation 7, client id "ab" with an
  // int16 length (not compact), empty header tags, then the body.
  auto frame = FromHex("0012 0003 00000007 0002 6162 00 0363 6b 0276 00");
  Reader r(frame);
  RequestHeader h;
  ASSERT_TRUE(DecodeRequestHeader(r, &h).ok());
  EXPECT_EQ(h.request_api_key, 18);
  EXPECT_EQ(h.request_api_version, 3);
  EXPECT_EQ(h.correlation_id, 7);
  EXPECT_EQ(h.client_id, "ab");
  ApiVersionsRequest body;
  ASSERT_TRUE(body.Decode(r, 3).ok());
  EXPECT_EQ(body.client_software_name, "ck");
  EXPECT_EQ(body.client_software_version, "v");
  EXPECT_EQ(r.remaining(), 0u);
}

TEST(CodecTest, UnknownApiKeyStillYieldsKeyVersionAndCorrelationId) {
  auto frame = FromHex("03e7 0005 0000abcd 0001 78 deadbeef");
  Reader r(frame);
  RequestHeader h;
  Status st = DecodeRequestHeader(r, &h);
  EXPECT_EQ(st.code(), StatusCode::kUnsupported);
  EXPECT_EQ(h.request_api_key, 999);
  EXPECT_EQ(h.request_api_version, 5);
  EXPECT_EQ(h.correlation_id, 0xabcd);
  EXPECT_EQ(h.client_id, "x");
}

TEST(CodecTest, TooNewVersionOfAKnownKeyIsUnsupported) {
  auto frame = FromHex("0012 0063 00000009 ffff");  // ApiVersions v99
  Reader r(frame);
  RequestHeader h;
  EXPECT_EQ(DecodeRequestHeader(r, &h).code(), StatusCode::kUnsupported);
  EXPECT_EQ(h.correlation_id, 9);
  EXPECT_FALSE(h.client_id.has_value());
  auto tiny = FromHex("0012 0003 0000");
  Reader r2(tiny);
  EXPECT_EQ(DecodeRequestHeader(r2, &h).code(), StatusCode::kCorruption);
}

TEST(CodecTest, TaggedFieldsHoldingDefaultsAreNeverWritten) {
  ApiVersionsResponse resp;  // finalized_features_epoch = -1 etc.: all defaults
  EXPECT_EQ(resp.finalized_features_epoch, -1);
  EXPECT_EQ(ToHex(EncodeToString(resp, 3)), "0000" "01" "00000000" "00");
  resp.zk_migration_ready = true;  // tag 3, one byte
  EXPECT_EQ(ToHex(EncodeToString(resp, 3)), "0000" "01" "00000000" "01" "03" "01" "01");
  resp.zk_migration_ready = false;
  resp.finalized_features_epoch = 5;  // tag 1, int64
  EXPECT_EQ(ToHex(EncodeToString(resp, 3)),
            "0000" "01" "00000000" "01" "01" "08" "0000000000000005");
}

TEST(CodecTest, FetchResponseTaggedStructWrittenOnlyWhenSet) {
  FetchResponse::PartitionData p;
  std::string plain = EncodeToString(p, 12);
  p.current_leader.leader_id = 3;
  std::string tagged = EncodeToString(p, 12);
  EXPECT_EQ(tagged.size(), plain.size() + 1 + 1 + 8 + 1);  // tag, size, two int32s, struct tags
  EXPECT_EQ(plain.back(), '\0');
}

TEST(CodecTest, EncodeResponseUsesTheRightHeader) {
  OutputBuffer out;
  ApiVersionsResponse av;
  EncodeResponse(out, 42, 3, av);
  EXPECT_EQ(ToHex(out.Flatten()), "0000002a" "0000" "01" "00000000" "00");  // header v0
  OutputBuffer out2;
  MetadataResponse md;
  EncodeResponse(out2, 42, 12, md);
  EXPECT_EQ(ToHex(out2.Flatten()).substr(0, 10), "0000002a00");  // header v1: tag byte
}

TEST(CodecTest, EncodeRequestThenDecodeHeaderRoundTrips) {
  OutputBuffer out;
  MetadataRequest md;
  md.topics = std::vector<MetadataRequest::MetadataRequestTopic>(1);
  (*md.topics)[0].name = "t1";
  EncodeRequest(out, 5, "me", 12, md);
  std::string bytes = out.Flatten();
  std::vector<uint8_t> frame(bytes.begin(), bytes.end());
  Reader r(frame);
  RequestHeader h;
  ASSERT_TRUE(DecodeRequestHeader(r, &h).ok());
  EXPECT_EQ(h.client_id, "me");
  MetadataRequest back;
  ASSERT_TRUE(back.Decode(r, 12).ok());
  ASSERT_TRUE(back.topics.has_value());
  EXPECT_EQ((*back.topics)[0].name, "t1");
}

}  // namespace
}  // namespace headrace::protocol
