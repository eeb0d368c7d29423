#include "headrace/status.h"

#include <cerrno>

#include <gtest/gtest.h>

namespace headrace {
namespace {

Result<int> Half(int x) {
  if (x % 2) return Status::InvalidArgument("odd");
  return x / 2;
}

Status Quarter(int x, int* out) {
  HR_ASSIGN_OR_RETURN(int h, Half(x));
  HR_ASSIGN_OR_RETURN(*out, Half(h));
  return Status::OK();
}

TEST(Status, OkIsDefaultAndPrintsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToString(), "OK");
}

TEST(Status, ErrorCarriesCodeAndMessage) {
  Status s = Status::Corruption("crc mismatch");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_EQ(s.ToString(), "Corruption: crc mismatch");
  EXPECT_EQ(Status::FromErrno("open x", ENOENT).ToString(),
            "IOError: open x: No such file or directory (ENOENT)");
  EXPECT_EQ(Status::FromErrno("write y", ENOSPC).sys_errno(), ENOSPC);
  EXPECT_EQ(Status::IOError("z").sys_errno(), 0);
}

TEST(Status, AssignOrReturnPropagatesFirstError) {
  int out = 0;
  EXPECT_TRUE(Quarter(8, &out).ok());
  EXPECT_EQ(out, 2);
  Status s = Quarter(6, &out);  // 6/2 = 3 is odd
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace headrace
