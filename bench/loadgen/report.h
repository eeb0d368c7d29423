// Aggregating the instances' results and printing them: a human summary and
// one JSON line for driver scripts (bench/run_suite.py).
#pragma once

#include <string>
#include <vector>

#include "consumer.h"
#include "options.h"
#include "producer.h"

namespace headrace::loadgen {

struct RunTotals {
  double broker_cpu_s = -1;  // broker utime+stime over the run; -1 = not measured
  double client_cpu_s = 0;   // this process's CPU over the run
  // Broker time runnable but not running (schedstat) over the run; -1 =
  // unknown. (The client's threads are gone by the end, so it has none.)
  double broker_wait_s = -1;
  double wall_s = 0;         // whole run, including connection setup and flush
};

// Prints the summary (stdout, or stderr when o.json) and, when o.json, one
// JSON object on one stdout line. Returns the number of errors seen
// (failed deliveries + client errors).
int PrintReport(const Options& o, const std::vector<ProducerResult>& producers,
                const std::vector<ConsumerResult>& consumers, const RunTotals& totals);

}  // namespace headrace::loadgen
