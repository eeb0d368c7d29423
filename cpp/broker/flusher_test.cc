#include "broker/flusher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <iostream>
#include <thread>

#include "broker/fake_log_test_util.h"

namespace headrace::broker {
namespace {

using namespace std::chrono_literals;
using testing::FakeBatch;
using testing::FakeLog;

std::shared_ptr<Partition> MakePartition(FakeLog** raw, int32_t id = 0) {
  auto log = std::make_unique<FakeLog>();
  *raw = log.get();
  return std::make_shared<Partition>(TopicPartition{"t", id}, Uuid::Random(), std::move(log),
                                     TopicSettings{}, nullptr);
}

Offset Append(Partition& p) {
  std::string b = FakeBatch(1);
  auto r = p.Append({reinterpret_cast<uint8_t*>(b.data()), b.size()});
  EXPECT_TRUE(r.ok());
  return r->last_offset;
}

bool WaitFor(const std::function<bool()>& cond) {
  for (int i = 0; i < 5000 && !cond(); ++i) std::this_thread::sleep_for(1ms);
  return cond();
}

TEST(FlusherTest, CallbackRunsAfterTheOffsetIsFlushed) {
  FakeLog* log;
  auto p = MakePartition(&log);
  Flusher flusher;
  Offset last = Append(*p);
  std::atomic<int> fired{0};
  std::atomic<bool> was_flushed{false};
  flusher.Request(p, last, [&](Status s) {
    EXPECT_TRUE(s.ok());
    was_flushed = p->flushed_offset() > last;
    ++fired;
  });
  ASSERT_TRUE(WaitFor([&] { return fired == 1; }));
  EXPECT_TRUE(was_flushed.load());
  EXPECT_EQ(log->flushes(), 1);
  // Already flushed: answered at once, no fsync.
  flusher.Request(p, last, [&](Status s) { ++fired; });
  EXPECT_EQ(fired.load(), 2);
  EXPECT_EQ(log->flushes(), 1);
}

// 64 producers append and wait for acks=all at the same time while each
// fsync takes 5 ms: they share a handful of fsyncs.
TEST(FlusherTest, ConcurrentRequestsShareFewFsyncs) {
  FakeLog* log;
  auto p = MakePartition(&log);
  log->flush_delay = 5ms;
  Flusher flusher;
  constexpr int kProducers = 64;
  std::atomic<int> ok{0};
  std::vector<std::thread> producers;
  for (int i = 0; i < kProducers; ++i) {
    producers.emplace_back([&] {
      Offset last = Append(*p);
      flusher.Request(p, last, [&, last](Status s) {
        if (s.ok() && p->flushed_offset() > last) ++ok;
      });
    });
  }
  for (auto& t : producers) t.join();
  ASSERT_TRUE(WaitFor([&] { return ok == kProducers; }));
  Flusher::Stats st = flusher.stats();
  EXPECT_EQ(st.requests, static_cast<uint64_t>(kProducers));
  EXPECT_EQ(static_cast<int>(st.fsyncs), log->flushes());
  EXPECT_LE(log->flushes(), kProducers / 4) << "group commit did not batch";
  std::cout << "group commit: " << kProducers << " acks=all requests, " << log->flushes()
            << " fsyncs in " << st.rounds << " rounds\n";
  EXPECT_GE(log->flushes(), 1);
}

TEST(FlusherTest, OneFsyncPerPartitionPerRound) {
  FakeLog *a_log, *b_log;
  auto a = MakePartition(&a_log, 0);
  auto b = MakePartition(&b_log, 1);
  Flusher::Options opts;
  opts.linger = 50ms;  // gather everything below into one round
  Flusher flusher(opts);
  std::atomic<int> fired{0};
  for (int i = 0; i < 10; ++i) {
    flusher.Request(a, Append(*a), [&](Status s) { fired += s.ok(); });
    flusher.Request(b, Append(*b), [&](Status s) { fired += s.ok(); });
  }
  ASSERT_TRUE(WaitFor([&] { return fired == 20; }));
  EXPECT_EQ(a_log->flushes(), 1);
  EXPECT_EQ(b_log->flushes(), 1);
  EXPECT_EQ(flusher.stats().rounds, 1u);
}

TEST(FlusherTest, StopFlushesPendingThenRefuses) {
  FakeLog* log;
  auto p = MakePartition(&log);
  log->flush_delay = 20ms;
  Flusher flusher;
  std::atomic<int> ok{0}, closed{0};
  for (int i = 0; i < 5; ++i) {
    flusher.Request(p, Append(*p), [&](Status s) { s.ok() ? ++ok : ++closed; });
  }
  flusher.Stop();
  EXPECT_EQ(ok.load(), 5);
  flusher.Request(p, Append(*p), [&](Status s) {
    EXPECT_EQ(s.code(), StatusCode::kClosed);
    ++closed;
  });
  EXPECT_EQ(closed.load(), 1);
}

}  // namespace
}  // namespace headrace::broker
