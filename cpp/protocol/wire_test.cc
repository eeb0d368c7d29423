// Wire primitive edge cases: fixed-width ints, varints, strings, bytes,
// nullable and compact forms, uuids, arrays, tagged-field sections.
#include "protocol/wire.h"

#include <gtest/gtest.h>

#include <climits>
#include <cstdio>
#include <unistd.h>

#include "protocol/test_util.h"

namespace headrace::protocol {
namespace {

using testing::FromHex;
using testing::ToHex;

std::string Write(const std::function<void(Writer&)>& fn) {
  OutputBuffer out;
  Writer w(out);
  fn(w);
  return out.Flatten();
}

TEST(WireTest, FixedWidthIntegersAreBigEndian) {
  std::string b = Write([](Writer& w) {
    w.Int8(-2); w.Int16(0x0102); w.Int32(-1); w.Int64(0x0102030405060708LL);
    w.Uint16(0xfffe); w.Uint32(0x80000000u); w.Float64(1.5); w.Bool(true);
  });
  EXPECT_EQ(ToHex(b), "fe0102ffffffff0102030405060708fffe800000003ff800000000000001");
  auto bytes = testing::Bytes(b);
  Reader r(bytes);
  int8_t a; int16_t c; int32_t d; int64_t e; uint16_t f; uint32_t g; double h; bool i;
  ASSERT_TRUE(r.Int8(&a).ok()); ASSERT_TRUE(r.Int16(&c).ok()); ASSERT_TRUE(r.Int32(&d).ok());
  ASSERT_TRUE(r.Int64(&e).ok()); ASSERT_TRUE(r.Uint16(&f).ok()); ASSERT_TRUE(r.Uint32(&g).ok());
  ASSERT_TRUE(r.Float64(&h).ok()); ASSERT_TRUE(r.Bool(&i).ok());
  EXPECT_EQ(a, -2); EXPECT_EQ(c, 0x0102); EXPECT_EQ(d, -1); EXPECT_EQ(e, 0x0102030405060708LL);
  EXPECT_EQ(f, 0xfffe); EXPECT_EQ(g, 0x80000000u); EXPECT_EQ(h, 1.5); EXPECT_TRUE(i);
  EXPECT_EQ(r.remaining(), 0u);
  EXPECT_EQ(r.Int8(&a).code(), StatusCode::kCorruption);
}

TEST(WireTest, TruncatedFixedWidthFails) {
  std::vector<uint8_t> three = {1, 2, 3};
  Reader r(three);
  int32_t v = 7;
  Status st = r.Int32(&v);
  EXPECT_EQ(st.code(), StatusCode::kCorruption);
  EXPECT_NE(st.message().find("malformed"), std::string::npos);
  EXPECT_EQ(r.position(), 0u);
}

TEST(WireTest, UnsignedVarintEdges) {
  struct Case { uint32_t v; const char* hex; };
  for (auto c : {Case{0, "00"}, Case{1, "01"}, Case{127, "7f"}, Case{128, "8001"},
                 Case{300, "ac02"}, Case{UINT32_MAX, "ffffffff0f"}}) {
    std::string b = Write([&](Writer& w) { w.UVarint(c.v); });
    EXPECT_EQ(ToHex(b), c.hex);
    auto bytes = testing::Bytes(b);
    Reader r(bytes);
    uint32_t back = 0;
    ASSERT_TRUE(r.UVarint(&back).ok());
    EXPECT_EQ(back, c.v);
  }
  auto too_long = FromHex("ffffffffff01");   // 6 bytes
  Reader r1(too_long);
  uint32_t v;
  EXPECT_FALSE(r1.UVarint(&v).ok());
  auto overflow = FromHex("ffffffff1f");     // 5th byte sets bit 32
  Reader r2(overflow);
  EXPECT_FALSE(r2.UVarint(&v).ok());
  auto cut = FromHex("8080");
  Reader r3(cut);
  EXPECT_FALSE(r3.UVarint(&v).ok());
}

TEST(WireTest, ZigzagVarintAndVarlong) {
  for (int32_t v : {0, -1, 1, -64, 63, 64, INT32_MIN, INT32_MAX}) {
    auto bytes = testing::Bytes(Write([&](Writer& w) { w.Varint(v); }));
    Reader r(bytes);
    int32_t back = 0;
    ASSERT_TRUE(r.Varint(&back).ok());
    EXPECT_EQ(back, v);
  }
  EXPECT_EQ(ToHex(Write([](Writer& w) { w.Varint(-1); })), "01");
  EXPECT_EQ(ToHex(Write([](Writer& w) { w.Varint(1); })), "02");
  for (int64_t v : {int64_t{0}, int64_t{-1}, int64_t{1} << 40, INT64_MIN, INT64_MAX}) {
    auto bytes = testing::Bytes(Write([&](Writer& w) { w.Varlong(v); }));
    Reader r(bytes);
    int64_t back = 0;
    ASSERT_TRUE(r.Varlong(&back).ok());
    EXPECT_EQ(back, v);
  }
  auto eleven = FromHex("ffffffffffffffffffff01");
  Reader r(eleven);
  int64_t v;
  EXPECT_FALSE(r.Varlong(&v).ok());
}

TEST(WireTest, StringsClassicAndCompactWithNulls) {
  EXPECT_EQ(ToHex(Write([](Writer& w) { w.String("ab", false); })), "00026162");
  EXPECT_EQ(ToHex(Write([](Writer& w) { w.String("ab", true); })), "036162");
  EXPECT_EQ(ToHex(Write([](Writer& w) { w.NullableString(std::nullopt, false); })), "ffff");
  EXPECT_EQ(ToHex(Write([](Writer& w) { w.NullableString(std::nullopt, true); })), "00");
  // A null written where the version does not allow null becomes "".
  EXPECT_EQ(ToHex(Write([](Writer& w) { w.NullableString(std::nullopt, true, false); })), "01");

  auto null_classic = FromHex("ffff");
  Reader r1(null_classic);
  std::optional<std::string> s = "x";
  ASSERT_TRUE(r1.NullableString(&s, false).ok());
  EXPECT_FALSE(s.has_value());
  Reader r2(null_classic);
  std::string plain;
  EXPECT_EQ(r2.String(&plain, false).code(), StatusCode::kCorruption);
  auto null_compact = FromHex("00");
  Reader r3(null_compact);
  EXPECT_FALSE(r3.NullableString(&s, true, /*allow_null=*/false).ok());
}

TEST(WireTest, AbsurdLengthsFailBeforeAllocating) {
  std::string s;
  auto str = FromHex("7fff41");           // claims 32767 bytes, has 1
  Reader r1(str);
  EXPECT_EQ(r1.String(&s, false).code(), StatusCode::kCorruption);
  auto bytes = FromHex("7fffffff41");     // claims 2 GiB
  Reader r2(bytes);
  EXPECT_EQ(r2.Bytes(&s, false).code(), StatusCode::kCorruption);
  auto compact = FromHex("ffffffff0f41"); // compact length 2^32-2
  Reader r3(compact);
  EXPECT_EQ(r3.Bytes(&s, true).code(), StatusCode::kCorruption);
  auto neg = FromHex("fffe");             // -2 is never valid
  Reader r4(neg);
  std::optional<std::string> o;
  EXPECT_EQ(r4.NullableString(&o, false).code(), StatusCode::kCorruption);
  auto arr = FromHex("7fffffff00000001");
  Reader r5(arr);
  std::vector<int32_t> ints;
  EXPECT_EQ(ReadArray(r5, &ints, 0, false).code(), StatusCode::kCorruption);
  auto arr2 = FromHex("00000002000000010000");  // 2 int32s, 6 bytes left
  Reader r6(arr2);
  EXPECT_EQ(ReadArray(r6, &ints, 0, false).code(), StatusCode::kCorruption);
}

TEST(WireTest, ArraysClassicCompactAndNull) {
  std::vector<int32_t> v = {1, 2};
  EXPECT_EQ(ToHex(Write([&](Writer& w) { WriteArray(w, v, 0, false); })),
            "000000020000000100000002");
  EXPECT_EQ(ToHex(Write([&](Writer& w) { WriteArray(w, v, 0, true); })), "030000000100000002");
  std::optional<std::vector<std::string>> none;
  EXPECT_EQ(ToHex(Write([&](Writer& w) { WriteNullableArray(w, none, 0, true, true); })), "00");
  EXPECT_EQ(ToHex(Write([&](Writer& w) { WriteNullableArray(w, none, 0, false, true); })),
            "ffffffff");
  auto good = FromHex("03 0261 0262");  // compact array of 2 compact strings "a", "b"
  Reader r(good);
  std::vector<std::string> out;
  ASSERT_TRUE(ReadArray(r, &out, 0, true).ok());
  EXPECT_EQ(out, (std::vector<std::string>{"a", "b"}));
}

TEST(WireTest, TaggedFieldsSkipUnknownAndBoundValues) {
  // two tags: tag 5 size 2 "ab", tag 9 size 0; then a trailing byte.
  auto bytes = FromHex("02 05 02 6162 09 00 7f");
  Reader r(bytes);
  std::vector<uint32_t> seen;
  ASSERT_TRUE(r.TaggedFields([&](uint32_t tag, Reader& v) {
    seen.push_back(tag);
    if (tag == 5) {
      EXPECT_EQ(v.remaining(), 2u);
    }
    return Status::OK();
  }).ok());
  EXPECT_EQ(seen, (std::vector<uint32_t>{5, 9}));
  EXPECT_EQ(r.remaining(), 1u);
  auto lying = FromHex("01 05 09 61");  // size 9 but one byte left
  Reader r2(lying);
  EXPECT_EQ(r2.SkipTaggedFields().code(), StatusCode::kCorruption);
}

TEST(WireTest, RecordsDecodeAsViewIntoTheMutableFrame) {
  auto frame = FromHex("00000003 aabbcc");
  Reader r(frame);
  Records rec;
  ASSERT_TRUE(r.ReadRecords(&rec, false).ok());
  ASSERT_EQ(rec.data.size(), 3u);
  EXPECT_EQ(rec.data.data(), frame.data() + 4);
  rec.data[0] = 0x11;  // the broker rewrites base offsets in place
  EXPECT_EQ(frame[4], 0x11);
  auto null_frame = FromHex("ffffffff");
  Reader r2(null_frame);
  ASSERT_TRUE(r2.ReadRecords(&rec, false).ok());
  EXPECT_TRUE(rec.is_null);
}

TEST(WireTest, RecordsFromSlicesAreAppendedNotCopied) {
  char path[] = "/tmp/hr_wire_test_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "0123456789", 10), 10);
  Records rec = Records::FromSlices({FileSlice{fd, FilePosition(2), 4, nullptr},
                                     FileSlice{fd, FilePosition(8), 2, nullptr}});
  OutputBuffer out;
  Writer w(out);
  w.WriteRecords(rec, /*compact=*/true);
  EXPECT_TRUE(out.has_slices());
  ASSERT_EQ(out.chunks().size(), 3u);
  EXPECT_EQ(out.chunks()[0].bytes, std::string("\x07", 1));  // uvarint 6+1
  EXPECT_EQ(out.Flatten(), std::string("\x07" "234589"));
  close(fd);
  unlink(path);
}

}  // namespace
}  // namespace headrace::protocol
