// Cost of client quotas on the request path (docs/performance.md "Client
// quotas"): what Produce pays per request with no quota configured (the
// fast path), with a quota that matches the client, and with many clients
// and threads sharing the manager.
#include <benchmark/benchmark.h>

#include <string>

#include "broker/security/quota/quota_manager.h"

namespace {

using headrace::broker::quota::ClientQuotaStore;
using headrace::broker::quota::EntityPart;
using headrace::broker::quota::QuotaConfig;
using headrace::broker::quota::QuotaKind;
using headrace::broker::quota::QuotaManager;

ClientQuotaStore& Store(bool with_quota) {
  static auto empty = std::move(ClientQuotaStore::Open("", nullptr)).value();
  static auto quotas = [] {
    auto s = std::move(ClientQuotaStore::Open("", nullptr)).value();
    // A default per client id, high enough never to throttle here.
    (void)s->Apply({{{{}, EntityPart::Default()}, {{"producer_byte_rate", 1e15}}}});
    return s;
  }();
  return with_quota ? *quotas : *empty;
}

void BM_ProduceRecord_NoQuota(benchmark::State& state) {
  QuotaManager m(QuotaConfig{}, &Store(false));
  for (auto _ : state) {
    benchmark::DoNotOptimize(m.Record(QuotaKind::kProduce, "ANONYMOUS", "producer-1", 16384));
  }
}
BENCHMARK(BM_ProduceRecord_NoQuota);

void BM_ProduceRecord_WithQuota(benchmark::State& state) {
  static QuotaManager* m = new QuotaManager(QuotaConfig{}, &Store(true));
  // Each thread its own client id (its own rate), as distinct connections.
  const std::string client = "producer-" + std::to_string(state.thread_index());
  for (auto _ : state) {
    benchmark::DoNotOptimize(m->Record(QuotaKind::kProduce, "ANONYMOUS", client, 16384));
  }
}
BENCHMARK(BM_ProduceRecord_WithQuota)->Threads(1)->Threads(2)->Threads(4);

void BM_ProduceRecord_WithQuotaSharedRate(benchmark::State& state) {
  static QuotaManager* m = new QuotaManager(QuotaConfig{}, &Store(true));
  for (auto _ : state) {  // every thread the same client id: one rate, one lock
    benchmark::DoNotOptimize(m->Record(QuotaKind::kProduce, "ANONYMOUS", "shared", 16384));
  }
}
BENCHMARK(BM_ProduceRecord_WithQuotaSharedRate)->Threads(1)->Threads(2)->Threads(4);

}  // namespace

BENCHMARK_MAIN();
