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
  uint64_t txns = 0;           // transactions committed (--txn-records)
  Histogram commit_ns;         // duration of each rd_kafka_commit_transaction
  std::string error;           // first error seen ("" if none)
};

// Sends this instance's share of the messages (`index` of o.producers):
// o.count / o.producers messages (the remainder to the first ones) or for
// o.duration_s, at o.rate / o.producers msgs/s if a rate is set, then
// flushes. Each value embeds its send time (client.h). With o.txn_records
// the instance is transactional: it commits every o.txn_records messages
// (and the rest at the end), aborting the open transaction after a send
// error. With o.warmup one message is delivered (and committed) before any
// figure is taken. Blocks until done.
void RunProducer(const Options& o, int index, ProducerResult* out);

}  // namespace headrace::loadgen
