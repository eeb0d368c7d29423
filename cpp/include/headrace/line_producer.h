// LineProducer: the bulk path of `headrace produce`. It hands a whole list of
// record values to librdkafka in one call, so producing costs no Python call
// per record (the CLI's floor with confluent_kafka's Producer.produce()).
//
// It does not link librdkafka. Open() uses the copy already loaded in this
// process (the one confluent_kafka brought: the same library, version and
// TLS/SASL support as the rest of the CLI) or, failing that,
// librdkafka.so.1, and resolves the few functions it calls by name.
//
// One producer, one topic, one thread: not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "headrace/status.h"

namespace headrace {

// A record librdkafka could not deliver (or refused to queue): its error code
// (rd_kafka_resp_err_t: negative = client-side, positive = the broker's
// Kafka error code), name and text.
struct ProduceFailure {
  int code = 0;
  std::string name;
  std::string text;
};

// The topic as the cluster's metadata describes it. `error` is 0 or an
// rd_kafka_resp_err_t (e.g. -185 timed out, 3 unknown topic).
struct ProduceTopicInfo {
  int error = 0;
  std::string error_text;
  std::vector<int32_t> partitions;
};

class LineProducer {
 public:
  // `conf`: librdkafka properties (bootstrap.servers, acks, security...).
  // Fails with InvalidArgument naming a bad property, or Unsupported when no
  // librdkafka can be loaded.
  static Result<std::unique_ptr<LineProducer>> Open(
      const std::vector<std::pair<std::string, std::string>>& conf, const std::string& topic);
  ~LineProducer();
  LineProducer(const LineProducer&) = delete;
  LineProducer& operator=(const LineProducer&) = delete;

  // Asks the cluster for the topic (the broker may auto-create it).
  ProduceTopicInfo Describe(int timeout_ms);

  // Queues values[0..n) for `partition` (-1: librdkafka's partitioner),
  // each copied, no key. Stops at the first value the local queue cannot
  // take and returns how many were queued; the caller polls and resumes.
  // A value librdkafka refuses for another reason counts as failed.
  size_t Produce(const std::vector<std::string_view>& values, int32_t partition);

  // Serves delivery reports for up to timeout_ms.
  void Poll(int timeout_ms);
  // Waits up to timeout_ms for every queued record; returns how many remain.
  int Flush(int timeout_ms);
  // Records queued or in flight.
  int QueueLength() const;

  // Records that failed (refused when queued or reported failed), and the
  // first few failures.
  int64_t failed() const { return failed_; }
  const std::vector<ProduceFailure>& failures() const { return failures_; }
  // Counts one failed record (the delivery-report callback's entry point).
  void RecordFailure(int code);

  struct Api;  // the resolved librdkafka functions (line_producer.cc)

 private:
  LineProducer(const Api* api, void* rk, void* rkt);

  const Api* api_;
  void* rk_;   // rd_kafka_t*
  void* rkt_;  // rd_kafka_topic_t*
  int64_t failed_ = 0;
  std::vector<ProduceFailure> failures_;
};

}  // namespace headrace
