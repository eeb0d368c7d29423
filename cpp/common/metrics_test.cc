#include "common/metrics.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "common/prometheus_text.h"

namespace headrace::metrics {
namespace {

constexpr int kThreads = 8;
constexpr int kPerThread = 100000;

template <typename Fn>
void RunThreads(Fn fn) {
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back([&fn, t] { fn(t); });
  for (auto& th : threads) th.join();
}

TEST(MetricsTest, ConcurrentCounterIncrementsSumExactly) {
  Counter c;
  CounterSet<3> set;
  RunThreads([&](int t) {
    for (int i = 0; i < kPerThread; ++i) {
      c.Add();
      set.Add(0, 2);
      set.Add(static_cast<size_t>(1 + t % 2), 1);
    }
  });
  EXPECT_EQ(c.Value(), uint64_t{kThreads} * kPerThread);
  EXPECT_EQ(set.Value(0), uint64_t{2} * kThreads * kPerThread);
  EXPECT_EQ(set.Value(1) + set.Value(2), uint64_t{kThreads} * kPerThread);
  EXPECT_EQ(set.Value(1), set.Value(2));
}

TEST(MetricsTest, GaugeUpAndDownAcrossThreadsSumsToNet) {
  Gauge g;
  RunThreads([&](int t) {
    for (int i = 0; i < kPerThread; ++i) g.Add(1);
    for (int i = 0; i < kPerThread - t; ++i) g.Add(-1);  // thread t keeps t
  });
  EXPECT_EQ(g.Value(), kThreads * (kThreads - 1) / 2);
}

TEST(MetricsTest, ConcurrentHistogramRecordsSumExactly) {
  Histogram h;
  RunThreads([&](int t) {
    for (int i = 0; i < kPerThread; ++i) h.Record(static_cast<uint64_t>(1000 * (t + 1)));
  });
  HistogramSnapshot s = h.Snapshot();
  EXPECT_EQ(s.count, uint64_t{kThreads} * kPerThread);
  uint64_t expect_sum = 0;
  for (int t = 0; t < kThreads; ++t) expect_sum += uint64_t{1000} * (t + 1) * kPerThread;
  EXPECT_EQ(s.sum, expect_sum);
}

TEST(MetricsTest, BucketBoundsAreLogScaleAndContiguous) {
  EXPECT_EQ(Histogram::UpperBound(0), 1536u);
  EXPECT_EQ(Histogram::UpperBound(1), 2048u);
  EXPECT_EQ(Histogram::UpperBound(2), 3072u);
  EXPECT_EQ(Histogram::BucketOf(0), 0u);
  EXPECT_EQ(Histogram::BucketOf(1535), 0u);
  EXPECT_EQ(Histogram::BucketOf(1536), 1u);
  EXPECT_EQ(Histogram::BucketOf(2047), 1u);
  EXPECT_EQ(Histogram::BucketOf(2048), 2u);
  EXPECT_EQ(Histogram::BucketOf(uint64_t{1} << 40), Histogram::kBuckets);  // overflow
  for (size_t b = 1; b < Histogram::kBuckets; ++b) {
    EXPECT_EQ(Histogram::BucketOf(Histogram::LowerBound(b)), b);
    EXPECT_EQ(Histogram::BucketOf(Histogram::UpperBound(b) - 1), b);
  }
}

TEST(MetricsTest, QuantilesFromBucketsStayWithinTheirBucket) {
  Histogram h;
  // 99 values of 10 µs, one of 10 ms: p50 is in 10 µs's bucket, p99 too,
  // p99.9+ in 10 ms's.
  for (int i = 0; i < 99; ++i) h.Record(10'000);
  h.Record(10'000'000);
  HistogramSnapshot s = h.Snapshot();
  const size_t small = Histogram::BucketOf(10'000), big = Histogram::BucketOf(10'000'000);
  for (double q : {0.5, 0.99}) {
    EXPECT_GE(s.Quantile(q), Histogram::LowerBound(small)) << q;
    EXPECT_LE(s.Quantile(q), Histogram::UpperBound(small)) << q;
  }
  EXPECT_GE(s.Quantile(0.999), Histogram::LowerBound(big));
  EXPECT_LE(s.Quantile(0.999), Histogram::UpperBound(big));
  EXPECT_EQ(HistogramSnapshot().Quantile(0.5), 0);

  // Uniform 1..1000 µs: the interpolated median lands within 10% of 500 µs.
  Histogram u;
  for (uint64_t us = 1; us <= 1000; ++us) u.Record(us * 1000);
  EXPECT_NEAR(u.Snapshot().Quantile(0.5), 500'000, 50'000);
  EXPECT_NEAR(u.Snapshot().Quantile(0.99), 990'000, 99'000);
}

TEST(MetricsTest, PrometheusTextEscapesAndWritesHistogramSeries) {
  PrometheusText p;
  p.Family("headrace_x_total", "counter", "a \\ help\nline");
  p.Sample("headrace_x_total", {{"topic", "a\"b\\c\nd"}}, uint64_t{7});
  p.Sample("headrace_y", {}, 0.25);
  Histogram h;
  h.Record(2000);
  p.Family("headrace_lat_seconds", "histogram", "latency");
  p.HistogramSeconds("headrace_lat_seconds", {{"api", "Produce"}}, h.Snapshot());
  const std::string& t = p.text();
  EXPECT_NE(t.find("# HELP headrace_x_total a \\\\ help\\nline\n"), std::string::npos);
  EXPECT_NE(t.find("headrace_x_total{topic=\"a\\\"b\\\\c\\nd\"} 7\n"), std::string::npos);
  EXPECT_NE(t.find("headrace_y 0.25\n"), std::string::npos);
  EXPECT_NE(t.find("headrace_lat_seconds_bucket{api=\"Produce\",le=\"1.536e-06\"} 0\n"),
            std::string::npos);
  EXPECT_NE(t.find("headrace_lat_seconds_bucket{api=\"Produce\",le=\"2.048e-06\"} 1\n"),
            std::string::npos);
  EXPECT_NE(t.find("headrace_lat_seconds_bucket{api=\"Produce\",le=\"+Inf\"} 1\n"),
            std::string::npos);
  EXPECT_NE(t.find("headrace_lat_seconds_count{api=\"Produce\"} 1\n"), std::string::npos);
  EXPECT_NE(t.find("headrace_lat_seconds_sum{api=\"Produce\"} 2e-06\n"), std::string::npos);
}

}  // namespace
}  // namespace headrace::metrics
