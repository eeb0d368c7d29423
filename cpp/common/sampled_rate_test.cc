#include "common/sampled_rate.h"

#include <gtest/gtest.h>

namespace headrace {
namespace {

using std::chrono::milliseconds;

TEST(SampledRateTest, FreshMeterDividesByTheMinimumSpan) {
  SampledRate r(11, milliseconds(1000));
  const auto t0 = SampledRate::Clock::now();
  r.Record(1000, t0);
  // One sample, 0 s elapsed: spread over (11 - 1) windows of 1 s.
  EXPECT_DOUBLE_EQ(r.Rate(t0), 100.0);
}

TEST(SampledRateTest, SteadyStreamConvergesToItsRate) {
  SampledRate r(2, milliseconds(1000));
  auto t = SampledRate::Clock::now();
  for (int i = 0; i < 100; ++i) {  // 500 units/s for 10 s, in 100 ms steps
    r.Record(50, t);
    t += milliseconds(100);
  }
  EXPECT_NEAR(r.Rate(t), 500.0, 60.0);
}

TEST(SampledRateTest, OldWindowsExpire) {
  SampledRate r(3, milliseconds(100));
  const auto t0 = SampledRate::Clock::now();
  r.Record(1e6, t0);
  EXPECT_GT(r.Rate(t0 + milliseconds(250)), 0.0);
  EXPECT_EQ(r.Rate(t0 + milliseconds(300)), 0.0);  // past 3 windows
}

}  // namespace
}  // namespace headrace
