// One producer instance: a thread with its own librdkafka producer.
#pragma once

#include <cstdint>
#include <string>

#include "histogram.h"
#include "options.h"

namespace headrace::loadgen {

struct ProducerResult {
  uint64_t sent = 0;           // accepted by the client
  uint64_t delivered = 0;      // delivery report without error
  uint64_t failed = 0;         // delivery report with an error
  uint64_t bytes = 0;          // value bytes delivered
  uint64_t first_send_ns = 0;  // NowNs() of the first send
  uint64_t end_ns = 0;         // NowNs() when every report was in (after flush)
  Histogram latency_ns;        // delivery report time - send time
  std::string error;           // first error seen ("" if none)
};

// Sends this instance's share of the messages (`index` of o.producers):
// o.count / o.producers messages (the remainder to the first ones) or for
// o.duration_s, at o.rate / o.producers msgs/s if a rate is set, then
// flushes. Each value embeds its send time (client.h). Blocks until done.
void RunProducer(const Options& o, int index, ProducerResult* out);

}  // namespace headrace::loadgen
