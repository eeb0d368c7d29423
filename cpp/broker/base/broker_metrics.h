// What the broker counts as it works (docs/metrics.md): the counters and
// histograms the data path records into. Everything computed from the
// broker's state instead (partitions, sizes, lag, purgatory) is read at
// scrape time by server/metrics_render.cc. One BrokerMetrics per broker; the
// parts below are wired to their recorders as pointers that are null when
// metrics are off (headrace.metrics.enable=false), so a hook is one branch.
//
// Threading: every Record/Add is lock-free (common/metrics.h); ForTopic
// takes a mutex and is called when a partition opens, never per request.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/metrics.h"

namespace headrace::broker {

// Per topic (not per partition: a label per partition multiplies series by
// the partition count), shared by the topic's partitions.
class TopicMetrics {
 public:
  enum : size_t { kBytesIn, kRecordsIn, kBytesOut, kCount };
  // A leader appended `records` in `bytes` of batches (produce).
  void AddProduced(int64_t bytes, int64_t records) {
    counters_.Add(kBytesIn, static_cast<uint64_t>(bytes));
    counters_.Add(kRecordsIn, static_cast<uint64_t>(records));
  }
  // A consumer fetch answered with `bytes` of this topic's batches.
  void AddFetched(int64_t bytes) { counters_.Add(kBytesOut, static_cast<uint64_t>(bytes)); }
  uint64_t Value(size_t which) const { return counters_.Value(which); }

 private:
  metrics::CounterSet<kCount> counters_;
};

class BrokerMetrics {
 public:
  static constexpr int16_t kMaxApiKey = 127;
  using Clock = std::chrono::steady_clock;

  BrokerMetrics() = default;
  ~BrokerMetrics();
  BrokerMetrics(const BrokerMetrics&) = delete;
  BrokerMetrics& operator=(const BrokerMetrics&) = delete;

  // A request of `api_key` was answered `elapsed` after it arrived (keys
  // outside [0, kMaxApiKey] are ignored).
  void RecordRequest(int16_t api_key, Clock::duration elapsed);
  // The latency histogram of `api_key`; null when none was recorded.
  const metrics::Histogram* request_latency(int16_t api_key) const;
  // A request of `api_key` spent `elapsed` in its handler's synchronous part
  // on the I/O thread (decode, checks, appends or reads, a direct answer);
  // not its wait in the purgatory or for other members (Kafka's LocalTimeMs
  // beside TotalTimeMs). Recorded by the Dispatcher.
  void RecordHandler(int16_t api_key, Clock::duration elapsed);
  const metrics::Histogram* handler_latency(int16_t api_key) const;

  // The counters of `topic`, made on first use; kept for the broker's life.
  std::shared_ptr<TopicMetrics> ForTopic(const std::string& topic);
  // Every topic's counters, by name.
  std::map<std::string, std::shared_ptr<TopicMetrics>> Topics() const;

  // A leader's ISR changed: `removed` members left it, `added` joined.
  void RecordIsrChange(size_t removed, size_t added) {
    if (removed > 0) isr_shrinks.Add();
    if (added > 0) isr_expands.Add();
  }

  metrics::Histogram fsync_latency;  // Partition::FlushLog on the flusher, ns
  metrics::Counter isr_shrinks;
  metrics::Counter isr_expands;

 private:
  using Slots = std::atomic<metrics::Histogram*>[kMaxApiKey + 1];
  static void Record(Slots& slots, int16_t api_key, Clock::duration elapsed);
  static const metrics::Histogram* Find(const Slots& slots, int16_t api_key);

  Slots requests_ = {};  // made on first use
  Slots handlers_ = {};  // made on first use
  mutable std::mutex topics_mu_;  // guards topics_
  std::map<std::string, std::shared_ptr<TopicMetrics>> topics_;
};

}  // namespace headrace::broker
