// headrace-loadgen: a native Kafka load generator on librdkafka, so that the
// broker (not a Python client) is what gets measured. `headrace-loadgen
// --help` lists the options; bench/README.md shows typical runs.
//
// Exit status: 0 when every message was delivered/received without error,
// 1 when some failed (the figures are still printed), 2 on a usage error.
#include <thread>
#include <vector>

#include "clock.h"
#include "consumer.h"
#include "options.h"
#include "producer.h"
#include "report.h"

namespace headrace::loadgen {
namespace {

void RunProducers(const Options& o, std::vector<ProducerResult>* results) {
  results->resize(o.producers);
  std::vector<std::thread> threads;
  for (int i = 0; i < o.producers; ++i)
    threads.emplace_back(RunProducer, std::cref(o), i, &(*results)[i]);
  for (auto& t : threads) t.join();
}

// Starts the consumers and waits until all are positioned, so that what is
// produced afterwards is exactly what they read.
std::vector<std::thread> StartConsumers(const Options& o, ConsumerControl* control,
                                        std::vector<ConsumerResult>* results) {
  results->resize(o.consumers);
  std::vector<std::thread> threads;
  for (int i = 0; i < o.consumers; ++i)
    threads.emplace_back(RunConsumer, std::cref(o), i, control, &(*results)[i]);
  while (control->ready.load() < o.consumers) SleepNs(1000000);
  return threads;
}

int Run(const Options& o) {
  std::vector<ProducerResult> producers;
  std::vector<ConsumerResult> consumers;
  ConsumerControl control;
  if (o.mode == Mode::kConsume && o.count > 0) control.target = static_cast<uint64_t>(o.count);
  RunTotals totals;
  const double broker_cpu0 = o.broker_pid > 0 ? ProcessCpuSeconds(o.broker_pid) : -1;
  const double self_cpu0 = SelfCpuSeconds();
  const double broker_wait0 = o.broker_pid > 0 ? RunQueueWaitSeconds(o.broker_pid) : -1;
  const uint64_t start = NowNs();

  std::vector<std::thread> consumer_threads;
  if (o.mode != Mode::kProduce) consumer_threads = StartConsumers(o, &control, &consumers);
  if (o.mode != Mode::kConsume) {
    RunProducers(o, &producers);
    if (o.mode == Mode::kBoth) {
      uint64_t delivered = 0;
      for (const auto& p : producers) delivered += p.delivered;
      control.target = delivered;
    }
  }
  for (auto& t : consumer_threads) t.join();

  totals.wall_s = (NowNs() - start) / 1e9;
  totals.client_cpu_s = SelfCpuSeconds() - self_cpu0;
  if (broker_wait0 >= 0) totals.broker_wait_s = RunQueueWaitSeconds(o.broker_pid) - broker_wait0;
  if (broker_cpu0 >= 0) {
    double cpu1 = ProcessCpuSeconds(o.broker_pid);
    totals.broker_cpu_s = cpu1 >= 0 ? cpu1 - broker_cpu0 : -1;
  }
  return PrintReport(o, producers, consumers, totals) == 0 ? 0 : 1;
}

}  // namespace
}  // namespace headrace::loadgen

int main(int argc, char** argv) {
  headrace::loadgen::Options o;
  int code = 0;
  if (!headrace::loadgen::ParseOptions(argc, argv, &o, &code)) return code;
  return headrace::loadgen::Run(o);
}
