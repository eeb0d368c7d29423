#include "broker/coordinator/group/group_records.h"

#include <gtest/gtest.h>

namespace headrace::broker::group {
namespace {

TEST(GroupRecords, OffsetKeyBytesAreTheDocumentedLayout) {
  std::string k = EncodeKey(RecordKey{RecordKind::kOffset, "g", "t", 3});
  EXPECT_EQ(k, std::string("\x00\x01\x00\x01g\x00\x01t\x00\x00\x00\x03", 12));
  auto d = DecodeKey(k);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->kind, RecordKind::kOffset);
  EXPECT_EQ(d->group, "g");
  EXPECT_EQ(d->topic, "t");
  EXPECT_EQ(d->partition, 3);
}

TEST(GroupRecords, OffsetValueRoundTripsWithNullMetadata) {
  OffsetValue v{42, 7, std::nullopt, 1234};
  auto d = DecodeOffsetValue(EncodeOffsetValue(v));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->offset, 42);
  EXPECT_EQ(d->leader_epoch, 7);
  EXPECT_FALSE(d->metadata.has_value());
  EXPECT_EQ(d->commit_time_ms, 1234);
}

TEST(GroupRecords, GroupValueRoundTrips) {
  GroupValue v;
  v.protocol_type = "consumer";
  v.generation = 5;
  v.protocol = "range";
  v.leader = "m1";
  v.members.push_back(StoredMember{"m1", "i1", "c", "/1.2.3.4", 6000, 30000, "meta", "asg"});
  auto d = DecodeGroupValue(EncodeGroupValue(v));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->generation, 5);
  ASSERT_EQ(d->members.size(), 1u);
  EXPECT_EQ(d->members[0].instance_id, "i1");
  EXPECT_EQ(d->members[0].assignment, "asg");
}

TEST(GroupRecords, TruncatedValueIsCorruption) {
  std::string b = EncodeOffsetValue(OffsetValue{1, 1, "x", 1});
  b.pop_back();
  EXPECT_EQ(DecodeOffsetValue(b).status().code(), StatusCode::kCorruption);
  EXPECT_EQ(DecodeKey(std::string("\x00\x09", 2)).status().code(), StatusCode::kCorruption);
}

TEST(GroupRecords, PendingTxnOffsetKeyAndValueAreTheDocumentedLayout) {
  RecordKey key{RecordKind::kPendingTxnOffset, "g", "t", 3, 0x0102};
  std::string k = EncodeKey(key);
  EXPECT_EQ(k, std::string("\x00\x03\x00\x01g\x00\x00\x00\x00\x00\x00\x01\x02"
                           "\x00\x01t\x00\x00\x00\x03", 20));
  auto d = DecodeKey(k);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->kind, RecordKind::kPendingTxnOffset);
  EXPECT_EQ(d->group, "g");
  EXPECT_EQ(d->producer_id, 0x0102);
  EXPECT_EQ(d->topic, "t");
  EXPECT_EQ(d->partition, 3);
  auto v = DecodePendingTxnOffsetValue(
      EncodePendingTxnOffsetValue(PendingTxnOffsetValue{4, OffsetValue{42, 7, "m", 99}}));
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->producer_epoch, 4);
  EXPECT_EQ(v->offset.offset, 42);
  EXPECT_EQ(v->offset.metadata, "m");
  EXPECT_EQ(v->offset.commit_time_ms, 99);
}

TEST(GroupRecords, TxnEndKeyCarriesOnlyTheProducerId) {
  RecordKey key;
  key.kind = RecordKind::kTxnEnd;
  key.producer_id = 7;
  std::string k = EncodeKey(key);
  EXPECT_EQ(k, std::string("\x00\x04\x00\x00\x00\x00\x00\x00\x00\x07", 10));
  auto d = DecodeKey(k);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->kind, RecordKind::kTxnEnd);
  EXPECT_EQ(d->producer_id, 7);
  // version 0, commit, epoch 2, end time 5.
  EXPECT_EQ(EncodeTxnEndValue(TxnEndValue{true, 2, 5}),
            std::string("\x00\x00\x01\x00\x02\x00\x00\x00\x00\x00\x00\x00\x05", 13));
  auto full = DecodeTxnEndValue(EncodeTxnEndValue(TxnEndValue{true, 2, 5}));
  ASSERT_TRUE(full.ok());
  EXPECT_TRUE(full->commit);
  EXPECT_EQ(full->producer_epoch, 2);
  EXPECT_EQ(full->end_time_ms, 5);
  // Records of older builds end after the commit flag.
  auto old = DecodeTxnEndValue(std::string("\x00\x00\x01", 3));
  ASSERT_TRUE(old.ok());
  EXPECT_TRUE(old->commit);
  EXPECT_EQ(old->producer_epoch, -1);
  auto fence = DecodeTxnEndValue(EncodeTxnEndValue(TxnEndValue{true, 3, 5, true}));
  ASSERT_TRUE(fence.ok());
  EXPECT_TRUE(fence->fence_only);
  EXPECT_FALSE(fence->commit);
  EXPECT_EQ(fence->producer_epoch, 3);
  EXPECT_EQ(DecodeTxnEndValue(std::string("\x00\x00\x03", 3)).status().code(),
            StatusCode::kCorruption);
  EXPECT_EQ(DecodeTxnEndValue(std::string("\x00\x00\x01\x00", 4)).status().code(),
            StatusCode::kCorruption);
  EXPECT_FALSE(DecodeTxnEndValue(EncodeTxnEndValue(TxnEndValue{false}))->commit);
}

}  // namespace
}  // namespace headrace::broker::group
