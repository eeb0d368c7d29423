// Malformed input never crashes and always comes back as an error Status:
// captured frames truncated at every length, absurd lengths and counts.
#include <gtest/gtest.h>

#include "protocol/codec.h"
#include "protocol/test_util.h"

namespace headrace::protocol {
namespace {

using testing::FromHex;

std::vector<uint8_t> ProduceFrame() {
  // kcat's Produce v7 without its record bytes: header v1, then
  // transactional_id null, acks -1, timeout 5000, 1 topic "t1", 1 partition
  // 0 with 3 bytes of records.
  return FromHex("0000 0007 0000002a 0007 7264 6b61 666b 61"
                 "ffff ffff 00001388 00000001 0002 7431 00000001 00000000 00000003 aabbcc");
}

TEST(MalformedTest, HandBuiltProduceFrameDecodes) {
  auto frame = ProduceFrame();
  auto again = testing::ReencodeRequest(frame);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(testing::ToHex(*again), testing::ToHex(std::string(frame.begin(), frame.end())));
}

TEST(MalformedTest, EveryTruncationOfEveryCapturedFrameFails) {
  int frames = 0;
  for (const char* name : {"ck_Produce_v10", "kcat_Produce_v7", "kp_Fetch_v12", "ck_Fetch_v16",
                           "ck_Metadata_v12", "kp_JoinGroup_v7", "aio_OffsetCommit_v3",
                           "ck_ApiVersions_v3", "kp_ListOffsets_v9"}) {
    auto full = FromHex(testing::ReadTestdata(name));
    ASSERT_FALSE(full.empty()) << name;
    ++frames;
    for (size_t n = 0; n < full.size(); ++n) {
      std::vector<uint8_t> cut(full.begin(), full.begin() + n);
      auto r = testing::ReencodeRequest(cut);
      EXPECT_FALSE(r.ok()) << name << " cut at " << n;
    }
  }
  EXPECT_EQ(frames, 9);
}

TEST(MalformedTest, AbsurdTopicCountIsCorruption) {
  auto frame = ProduceFrame();
  // topic array count lives after header(17) + txn id(2) + acks(2) + timeout(4)
  frame[25] = 0x7f; frame[26] = 0xff; frame[27] = 0xff; frame[28] = 0xff;
  auto r = testing::ReencodeRequest(frame);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
}

TEST(MalformedTest, AbsurdStringAndRecordsLengthsAreCorruption) {
  auto frame = ProduceFrame();
  frame[29] = 0x7f;  // topic name length 0x7f02
  EXPECT_EQ(testing::ReencodeRequest(frame).status().code(), StatusCode::kCorruption);
  frame = ProduceFrame();
  frame[41] = 0x7f;  // records length 0x7f000003
  EXPECT_EQ(testing::ReencodeRequest(frame).status().code(), StatusCode::kCorruption);
  frame = ProduceFrame();
  frame[41] = 0xff; frame[42] = 0xff; frame[43] = 0xff; frame[44] = 0xfe;  // -2
  EXPECT_EQ(testing::ReencodeRequest(frame).status().code(), StatusCode::kCorruption);
}

TEST(MalformedTest, FlexibleHugeCompactArrayIsCorruption) {
  // Metadata v12 (flexible, header v2): client id "c", no header tags, then
  // a compact topics array claiming 2^28 entries.
  auto frame = FromHex("0003 000c 00000001 0001 63 00 80808080 01");
  auto r = testing::ReencodeRequest(frame);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
}

TEST(MalformedTest, TrailingGarbageAfterBodyIsReported) {
  auto frame = ProduceFrame();
  frame.push_back(0);
  EXPECT_FALSE(testing::ReencodeRequest(frame).ok());
}

}  // namespace
}  // namespace headrace::protocol
