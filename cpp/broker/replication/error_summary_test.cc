// ErrorSummary: one WARN line per streak and interval, an INFO line with the
// count when it works again.
#include "broker/replication/error_summary.h"

#include <gtest/gtest.h>

#include <thread>

namespace headrace::broker::replication {
namespace {

TEST(ErrorSummaryTest, RepeatedErrorsAreSummarisedAndASuccessStartsAFreshStreak) {
  ErrorSummary summary("test: ", std::chrono::milliseconds(100));
  for (int i = 0; i < 50; ++i) summary.Note("connection refused");
  EXPECT_EQ(summary.lines(), 1u);  // the first only
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  summary.Note("connection refused");
  EXPECT_EQ(summary.lines(), 2u);  // one line with the count after the interval
  summary.Note("connection refused");
  summary.Success();
  EXPECT_EQ(summary.lines(), 3u);  // "working again after 1 more error(s)"
  summary.Success();
  EXPECT_EQ(summary.lines(), 3u);
  summary.Note("timed out");  // a new streak: at once
  EXPECT_EQ(summary.lines(), 4u);
}

}  // namespace
}  // namespace headrace::broker::replication
