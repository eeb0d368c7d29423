// Metrics micro-benchmarks (docs/performance.md, "Metrics overhead"): what
// one recording costs on the data path.
//   Metrics/counter_add          CounterSet::Add (a topic's bytes in)
//   Metrics/histogram_record     Histogram::Record (an fsync, a request)
//   Metrics/request_hook         a broker::Request made and answered with
//                                the dispatcher's timing: two clock reads
//                                and one histogram record by API
//   Metrics/request_no_hook      the same without timing (the baseline)
//   Metrics/stall_clock_turn     a network thread's turn measured by the
//                                stall detector (net/stall_clock.h): one
//                                getrusage and two clock reads
// The ->Threads(N) variants record from N threads at once into the same
// metric: per-thread shards keep them from sharing a cache line.
#include <benchmark/benchmark.h>

#include "broker/api/handler.h"
#include "broker/base/broker_metrics.h"
#include "common/metrics.h"
#include "net/stall_clock.h"

namespace headrace {
namespace {

broker::BrokerMetrics& Shared() {
  static broker::BrokerMetrics m;
  return m;
}

void CounterAdd(benchmark::State& state) {
  static metrics::CounterSet<3> c;
  for (auto _ : state) c.Add(0, 100);
  benchmark::DoNotOptimize(c.Value(0));
}
BENCHMARK(CounterAdd)->Name("Metrics/counter_add")->Threads(1)->Threads(2)->Threads(4);

void HistogramRecord(benchmark::State& state) {
  static metrics::Histogram h;
  uint64_t v = 1000;
  for (auto _ : state) {
    h.Record(v);
    v = v * 3 % 100'000'000 + 1000;
  }
}
BENCHMARK(HistogramRecord)->Name("Metrics/histogram_record")->Threads(1)->Threads(2)->Threads(4);

// One request made and answered through broker::Request, with and without
// the dispatcher's timing (Request::TimeInto): the difference is the hook.
void AnswerRequest(benchmark::State& state, broker::BrokerMetrics* m) {
  int answered = 0;
  net::Responder respond = [&answered](net::Reply) { ++answered; };
  protocol::RequestHeader header;
  header.request_api_key = 0;
  for (auto _ : state) {
    broker::Request req(header, net::ConnectionInfo{}, respond);
    req.TimeInto(m);
    req.NoResponse();
  }
  benchmark::DoNotOptimize(answered);
}

void RequestHook(benchmark::State& state) { AnswerRequest(state, &Shared()); }
BENCHMARK(RequestHook)->Name("Metrics/request_hook")->Threads(1)->Threads(2);

void RequestNoHook(benchmark::State& state) { AnswerRequest(state, nullptr); }
BENCHMARK(RequestNoHook)->Name("Metrics/request_no_hook")->Threads(1)->Threads(2);

void StallClockTurn(benchmark::State& state) {
  net::StallClock clock;
  for (auto _ : state) {
    clock.TurnBegins();
    benchmark::DoNotOptimize(clock.TurnEnds());
  }
}
BENCHMARK(StallClockTurn)->Name("Metrics/stall_clock_turn");

}  // namespace
}  // namespace headrace

BENCHMARK_MAIN();
