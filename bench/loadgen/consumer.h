// One consumer instance: a thread with its own librdkafka consumer, reading
// the partitions p of 0..o.partitions-1 with p % o.consumers == index.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "histogram.h"
#include "options.h"

namespace headrace::loadgen {

// Shared by all consumer threads and the main thread.
struct ConsumerControl {
  std::atomic<int> ready{0};                  // consumers positioned (assigned)
  std::atomic<uint64_t> received{0};          // messages received by all consumers
  std::atomic<uint64_t> target{UINT64_MAX};   // stop once `received` reaches it
};

struct ConsumerResult {
  uint64_t received = 0;
  uint64_t bytes = 0;          // value bytes
  uint64_t start_ns = 0;       // NowNs() when positioned and starting to poll
  uint64_t first_ns = 0;       // NowNs() of the first message
  uint64_t last_ns = 0;        // NowNs() of the last message
  Histogram e2e_ns;            // receive time - send time carried in the value
  std::string error;
};

// Assigns this instance's partitions at their start (o.from_beginning, consume
// mode) or at their current end (otherwise), bumps control->ready, then
// consumes until: control->target is reached, every partition reached its
// end (consume mode from the beginning), or o.idle_timeout_s without data.
void RunConsumer(const Options& o, int index, ConsumerControl* control, ConsumerResult* out);

}  // namespace headrace::loadgen
