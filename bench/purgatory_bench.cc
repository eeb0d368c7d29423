// Purgatory micro-benchmarks: what parking a delayed request costs, and
// completing it when the watched offset moves — the overhead acks=all
// produces and long-poll fetches pay on top of the append and the fsync.
//   Purgatory/wait+complete/pending:N   one Wait, then the HW advance that
//                                       completes it, with N other waiters
//                                       parked on other partitions
//   Purgatory/advance_no_waiter         a HW advance nobody waits for (every
//                                       append pays it)
// Completions run inline (no executor), so the figures exclude the hand-off
// to the connection's loop (one mailbox push and, off-loop, one eventfd
// write).
#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include "broker/partition/fake_log_test_util.h"
#include "broker/partition/purgatory.h"

namespace headrace {
namespace {

using broker::Partition;
using broker::Purgatory;
using broker::Watermark;
using broker::WakeReason;

std::shared_ptr<Partition> MakePartition(broker::PartitionListener* listener, int32_t id) {
  broker::PartitionServices services;
  services.listener = listener;
  return std::make_shared<Partition>(broker::TopicPartition{"bench", id}, Uuid(),
                                     std::make_unique<broker::testing::FakeLog>(),
                                     broker::TopicSettings{}, services);
}

void Append(Partition& p, std::string& batch) {
  auto r = p.AppendAsLeader({reinterpret_cast<uint8_t*>(batch.data()), batch.size()});
  benchmark::DoNotOptimize(r);
}

void BM_WaitAndComplete(benchmark::State& state) {
  Purgatory purgatory;
  auto p = MakePartition(&purgatory, 0);
  std::vector<std::shared_ptr<Partition>> others;
  for (int i = 0; i < 100; ++i) others.push_back(MakePartition(&purgatory, i + 1));
  for (int64_t i = 0; i < state.range(0); ++i) {
    auto& o = others[i % others.size()];
    purgatory.Wait({{o, Watermark::kHighWatermark, Offset(1 << 30)}},
                   Purgatory::Clock::now() + std::chrono::hours(1), nullptr, [](WakeReason) {});
  }
  std::string batch = broker::testing::FakeBatch(1);
  int completed = 0;
  for (auto _ : state) {
    purgatory.Wait({{p, Watermark::kHighWatermark, p->high_watermark() + 1}},
                   Purgatory::Clock::now() + std::chrono::seconds(30), nullptr,
                   [&completed](WakeReason) { ++completed; });
    Append(*p, batch);  // completes the waiter
  }
  state.counters["completed"] = completed;
}
BENCHMARK(BM_WaitAndComplete)->Name("Purgatory/wait+complete")->ArgName("pending")->Arg(0)->Arg(10000);

void BM_AdvanceNoWaiter(benchmark::State& state) {
  Purgatory purgatory;
  auto p = MakePartition(&purgatory, 0);
  std::string batch = broker::testing::FakeBatch(1);
  for (auto _ : state) Append(*p, batch);
}
BENCHMARK(BM_AdvanceNoWaiter)->Name("Purgatory/advance_no_waiter");

// The same append without a listener: the baseline the two above add to.
void BM_AppendNoListener(benchmark::State& state) {
  auto p = MakePartition(nullptr, 0);
  std::string batch = broker::testing::FakeBatch(1);
  for (auto _ : state) Append(*p, batch);
}
BENCHMARK(BM_AppendNoListener)->Name("Purgatory/append_without_listener");

}  // namespace
}  // namespace headrace

BENCHMARK_MAIN();
