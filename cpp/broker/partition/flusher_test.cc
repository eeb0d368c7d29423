#include "broker/partition/flusher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>

#include "broker/partition/fake_log_test_util.h"

namespace headrace::broker {
namespace {

using namespace std::chrono_literals;
using testing::FakeBatch;
using testing::FakeLog;

// A partition whose HW follows its fsyncs (headrace.acks.all.fsync).
// `on_flush`: FakeLog::on_flush, set before the partition exists.
std::shared_ptr<Partition> MakePartition(FakeLog** raw, Flusher* flusher, int32_t id = 0,
                                         std::function<Status()> on_flush = nullptr) {
  auto log = std::make_unique<FakeLog>();
  log->on_flush = std::move(on_flush);
  *raw = log.get();
  PartitionServices services;
  services.flusher = flusher;
  services.commit_requires_fsync = true;
  return std::make_shared<Partition>(TopicPartition{"t", id}, Uuid::Random(), std::move(log),
                                     TopicSettings{}, services);
}

Offset Append(Partition& p) {
  std::string b = FakeBatch(1);
  auto r = p.AppendAsLeader({reinterpret_cast<uint8_t*>(b.data()), b.size()});
  EXPECT_TRUE(r.ok());
  return r->last_offset;
}

bool WaitFor(const std::function<bool()>& cond) {
  for (int i = 0; i < 5000 && !cond(); ++i) std::this_thread::sleep_for(1ms);
  return cond();
}

TEST(FlusherTest, AnAppendIsFsyncedOnTheFlusherThreadThenCommitted) {
  Flusher flusher;
  FakeLog* log;
  auto p = MakePartition(&log, &flusher);
  Offset last = Append(*p);
  ASSERT_TRUE(WaitFor([&] { return p->high_watermark() > last; }));
  EXPECT_EQ(log->flushes(), 1);
  EXPECT_EQ(p->flushed_offset(), Offset(1));
  EXPECT_EQ(flusher.stats().fsyncs, 1u);
}

TEST(FlusherTest, HeldFlusherKeepsTheHighWatermarkAtTheFlushedOffset) {
  Flusher flusher;
  FakeLog* log;
  auto p = MakePartition(&log, &flusher);
  flusher.Hold();
  for (int i = 0; i < 5; ++i) Append(*p);
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(p->log_end_offset(), Offset(5));
  EXPECT_EQ(p->high_watermark(), Offset(0));  // appended, not committed
  auto read = p->Read(Offset(0), 1 << 20, IsolationLevel::kReadUncommitted);
  ASSERT_TRUE(read.ok());
  EXPECT_TRUE(read->data.slices.empty());  // nothing visible to consumers
  flusher.Release();
  ASSERT_TRUE(WaitFor([&] { return p->high_watermark() == Offset(5); }));
  EXPECT_EQ(log->flushes(), 1);  // scheduled once while held: one fsync
}

TEST(FlusherTest, ConcurrentAppendsShareFsyncs) {
  Flusher flusher;
  FakeLog* log;
  auto p = MakePartition(&log, &flusher);
  log->flush_delay = 5ms;  // a slow disk
  constexpr int kThreads = 8, kPerThread = 25;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) {
        Offset last = Append(*p);
        ASSERT_TRUE(WaitFor([&] { return p->high_watermark() > last; }));
      }
    });
  }
  for (auto& t : threads) t.join();
  const int appends = kThreads * kPerThread;
  EXPECT_EQ(p->high_watermark(), Offset(appends));
  std::printf("%d acks=all appends, %d fsyncs\n", appends, log->flushes());
  EXPECT_LT(log->flushes(), appends / 2);  // group commit
}

TEST(FlusherTest, EachPartitionIsFsyncedOncePerRound) {
  Flusher flusher;
  flusher.Hold();
  FakeLog *a_log, *b_log;
  auto a = MakePartition(&a_log, &flusher, 0);
  auto b = MakePartition(&b_log, &flusher, 1);
  for (int i = 0; i < 10; ++i) {
    Append(*a);
    Append(*b);
  }
  flusher.Release();
  ASSERT_TRUE(WaitFor([&] { return a->high_watermark() == Offset(10) && b->high_watermark() == Offset(10); }));
  EXPECT_EQ(a_log->flushes(), 1);
  EXPECT_EQ(b_log->flushes(), 1);
  EXPECT_EQ(flusher.stats().rounds, 1u);
}

TEST(FlusherTest, StopFlushesWhatIsScheduledAndIgnoresLaterSchedules) {
  FakeLog* log;
  auto flusher = std::make_unique<Flusher>();
  auto p = MakePartition(&log, flusher.get());
  flusher->Hold();
  Append(*p);
  flusher->Stop();
  EXPECT_EQ(p->high_watermark(), Offset(1));
  Append(*p);  // after Stop: not flushed here (Close will)
  std::this_thread::sleep_for(10ms);
  EXPECT_EQ(log->flushes(), 1);
  EXPECT_EQ(p->high_watermark(), Offset(1));
}

Flusher::Options Threads(int threads) {
  Flusher::Options o;
  o.threads = threads;
  return o;
}

// Counts the fsyncs in progress and the most seen at once.
struct InFlight {
  std::atomic<int> now{0};
  std::atomic<int> max{0};
  void Enter() {
    int n = now.fetch_add(1) + 1;
    for (int m = max.load(); n > m && !max.compare_exchange_weak(m, n);) {
    }
  }
  void Leave() { now.fetch_sub(1); }
};

TEST(FlusherTest, ARoundsPartitionsAreFsyncedConcurrently) {
  constexpr int kPartitions = 4;
  Flusher flusher(Threads(kPartitions));
  flusher.Hold();
  // Each fsync waits (up to 5 s) until all four have started: they finish
  // only if the round runs them at once.
  std::mutex mu;
  std::condition_variable cv;
  int started = 0;
  std::atomic<int> all_started{0};
  auto latch = [&]() -> Status {
    std::unique_lock<std::mutex> l(mu);
    if (++started == kPartitions) cv.notify_all();
    if (cv.wait_for(l, 5s, [&] { return started >= kPartitions; })) all_started.fetch_add(1);
    return Status::OK();
  };
  std::vector<std::shared_ptr<Partition>> parts;
  FakeLog* log;
  for (int i = 0; i < kPartitions; ++i) {
    parts.push_back(MakePartition(&log, &flusher, i, latch));
    Append(*parts.back());
  }
  const auto start = std::chrono::steady_clock::now();
  flusher.Release();
  ASSERT_TRUE(WaitFor([&] {
    for (auto& p : parts) {
      if (p->high_watermark() != Offset(1)) return false;
    }
    return true;
  }));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 4s);  // no fsync waited out its latch
  flusher.Stop();
  EXPECT_EQ(all_started.load(), kPartitions);
  EXPECT_EQ(flusher.stats().rounds, 1u);
  EXPECT_EQ(flusher.stats().fsyncs, uint64_t(kPartitions));
}

TEST(FlusherTest, OneThreadFsyncsARoundOneAfterAnother) {
  Flusher flusher(Threads(1));
  flusher.Hold();
  InFlight in_flight;
  auto slow = [&] {
    in_flight.Enter();
    std::this_thread::sleep_for(2ms);
    in_flight.Leave();
    return Status::OK();
  };
  std::vector<std::shared_ptr<Partition>> parts;
  FakeLog* log;
  for (int i = 0; i < 4; ++i) {
    parts.push_back(MakePartition(&log, &flusher, i, slow));
    Append(*parts.back());
  }
  flusher.Release();
  ASSERT_TRUE(WaitFor([&] { return flusher.stats().fsyncs == 4; }));
  flusher.Stop();
  EXPECT_EQ(in_flight.max.load(), 1);
}

// Appends and flush requests from many threads to a few partitions: no
// partition is ever in two fsyncs at once, and everything ends committed.
TEST(FlusherTest, APartitionIsNeverInTwoFsyncsAtOnce) {
  constexpr int kPartitions = 6, kThreads = 6;
  constexpr auto kStorm = 300ms;
  Flusher flusher(Threads(4));
  std::vector<InFlight> in_flight(kPartitions);
  InFlight overall;
  std::vector<std::shared_ptr<Partition>> parts;
  std::vector<FakeLog*> logs(kPartitions);
  for (int i = 0; i < kPartitions; ++i) {
    parts.push_back(MakePartition(&logs[i], &flusher, i, [&, i] {
      in_flight[i].Enter();
      overall.Enter();
      std::this_thread::sleep_for(100us);
      overall.Leave();
      in_flight[i].Leave();
      return Status::OK();
    }));
  }
  std::vector<std::thread> threads;
  std::atomic<int> appended{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      const auto end = std::chrono::steady_clock::now() + kStorm;
      for (int i = 0; std::chrono::steady_clock::now() < end; ++i) {
        Partition& p = *parts[rng() % kPartitions];
        if (i % 3 == 0) {
          p.RequestFlush();
        } else {
          Append(p);
          appended.fetch_add(1);
        }
        if (i % 16 == 0) std::this_thread::sleep_for(50us);  // let rounds interleave
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_TRUE(WaitFor([&] {
    int64_t committed = 0;
    for (auto& p : parts) committed += p->high_watermark().value();
    return committed == appended.load();
  }));
  flusher.Stop();  // no fsync (nor its hook on this test's locals) runs past here
  for (int i = 0; i < kPartitions; ++i) {
    EXPECT_EQ(in_flight[i].max.load(), 1) << "partition " << i;
    EXPECT_EQ(parts[i]->flushed_offset(), parts[i]->log_end_offset());
  }
  const Flusher::Stats stats = flusher.stats();
  std::printf("%d appends, %llu rounds, %llu fsyncs, at most %d at once\n", appended.load(),
              static_cast<unsigned long long>(stats.rounds),
              static_cast<unsigned long long>(stats.fsyncs), overall.max.load());
  EXPECT_LE(overall.max.load(), 4);  // the pool's size
  EXPECT_EQ(stats.failures, 0u);
}

TEST(FlusherTest, StopFlushesARoundWithThePoolThenStops) {
  constexpr int kPartitions = 6;
  auto flusher = std::make_unique<Flusher>(Threads(3));
  flusher->Hold();
  std::vector<std::shared_ptr<Partition>> parts;
  std::vector<FakeLog*> logs(kPartitions);
  for (int i = 0; i < kPartitions; ++i) {
    parts.push_back(MakePartition(&logs[i], flusher.get(), i));
    logs[i]->flush_delay = 2ms;
    Append(*parts.back());
  }
  flusher->Stop();
  for (int i = 0; i < kPartitions; ++i) {
    EXPECT_EQ(parts[i]->high_watermark(), Offset(1));
    EXPECT_EQ(logs[i]->flushes(), 1);
  }
  Append(*parts[0]);  // after Stop: not flushed here
  flusher.reset();
  EXPECT_EQ(logs[0]->flushes(), 1);
  EXPECT_EQ(parts[0]->high_watermark(), Offset(1));
}

TEST(FlusherTest, AFailedFsyncTakesOnlyItsPartitionOffline) {
  Flusher flusher(Threads(4));
  flusher.Hold();
  FakeLog *a_log, *bad_log, *c_log;
  auto a = MakePartition(&a_log, &flusher, 0);
  auto bad = MakePartition(&bad_log, &flusher, 1, [] { return Status::IOError("EIO"); });
  auto c = MakePartition(&c_log, &flusher, 2);
  Append(*a);
  Append(*bad);
  Append(*c);
  flusher.Release();
  ASSERT_TRUE(WaitFor([&] { return flusher.stats().fsyncs == 3; }));
  EXPECT_TRUE(bad->offline());
  EXPECT_EQ(bad->high_watermark(), Offset(0));
  EXPECT_EQ(flusher.stats().failures, 1u);
  EXPECT_FALSE(a->offline());
  EXPECT_FALSE(c->offline());
  EXPECT_EQ(a->high_watermark(), Offset(1));
  EXPECT_EQ(c->high_watermark(), Offset(1));
  // The others go on being flushed; the offline one is not scheduled again.
  Append(*a);
  Append(*c);
  ASSERT_TRUE(WaitFor([&] { return a->high_watermark() == Offset(2) && c->high_watermark() == Offset(2); }));
  std::string batch = FakeBatch(1);
  EXPECT_FALSE(bad->AppendAsLeader({reinterpret_cast<uint8_t*>(batch.data()), batch.size()}).ok());
  EXPECT_EQ(flusher.stats().failures, 1u);
}

}  // namespace
}  // namespace headrace::broker
