#include "log/filename.h"

#include <gtest/gtest.h>

namespace headrace::filename {
namespace {

TEST(Filename, SegmentNamesArePaddedTo20Digits) {
  EXPECT_EQ(SegmentFileName(Offset(42), FileKind::kLog), "00000000000000000042.log");
  EXPECT_EQ(SegmentFileName(Offset(0), FileKind::kOffsetIndex), "00000000000000000000.index");
  EXPECT_EQ(SegmentFileName(Offset(INT64_MAX), FileKind::kTimeIndex),
            "09223372036854775807.timeindex");
  EXPECT_EQ(SegmentPath("/d", Offset(7), FileKind::kLog), "/d/00000000000000000007.log");
  EXPECT_EQ(DeletedPath("/d/x.log"), "/d/x.log.deleted");
}

TEST(Filename, ParseRoundTripsAndRejectsForeignNames) {
  for (FileKind k : {FileKind::kLog, FileKind::kOffsetIndex, FileKind::kTimeIndex}) {
    auto p = Parse(SegmentFileName(Offset(123456), k));
    ASSERT_TRUE(p);
    EXPECT_EQ(p->type, ParsedName::Type::kSegmentFile);
    EXPECT_EQ(p->base, Offset(123456));
    EXPECT_EQ(p->kind, k);
    EXPECT_FALSE(p->deleted);
  }
  auto d = Parse("00000000000000000005.index.deleted");
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->deleted);
  EXPECT_EQ(d->kind, FileKind::kOffsetIndex);
  EXPECT_EQ(Parse("log.checkpoint")->type, ParsedName::Type::kCheckpoint);
  EXPECT_EQ(Parse("log.checkpoint.tmp")->type, ParsedName::Type::kCheckpointTemp);
  for (const char* bad : {"0000000000000000005.log", "0000000000000000000a.log",
                          "00000000000000000005.txt", "00000000000000000005", "leader-epoch",
                          "99999999999999999999.log"})
    EXPECT_FALSE(Parse(bad)) << bad;
}

}  // namespace
}  // namespace headrace::filename
