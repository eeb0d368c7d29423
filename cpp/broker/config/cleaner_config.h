// Settings of the log cleaner (Kafka's log.cleaner.* broker properties):
// one config table (config_table.h). docs/compaction.md and
// docs/configuration.md describe them. The four per-topic keys
// (min.cleanable.dirty.ratio, delete.retention.ms, min/max.compaction.lag.ms)
// take these broker values when a topic does not set them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "broker/config/config_table.h"

namespace headrace::broker {

struct CleanerConfig {
  bool enable = true;                            // log.cleaner.enable
  int32_t threads = 1;                           // log.cleaner.threads
  int64_t dedupe_buffer_size = 134217728;        // log.cleaner.dedupe.buffer.size (all threads)
  double io_max_bytes_per_second = 1.7976931348623157e308;  // log.cleaner.io.max.bytes.per.second
  int64_t backoff_ms = 15000;                    // log.cleaner.backoff.ms
  double min_cleanable_ratio = 0.5;              // log.cleaner.min.cleanable.ratio
  int64_t delete_retention_ms = 86400000;        // log.cleaner.delete.retention.ms
  int64_t min_compaction_lag_ms = 0;             // log.cleaner.min.compaction.lag.ms
  int64_t max_compaction_lag_ms = INT64_MAX;     // log.cleaner.max.compaction.lag.ms
  // Accepted for compatibility, no effect (headrace reads and writes whole
  // batches through its own buffers): log.cleaner.io.buffer.size,
  // log.cleaner.io.buffer.load.factor.
  int32_t io_buffer_size = 524288;
  double io_buffer_load_factor = 0.9;

  // Sets one property. NotFound for a key that is not a cleaner setting;
  // InvalidArgument naming the key for a bad value.
  Status Set(const std::string& key, const std::string& value);
  std::vector<SettingDoc> Describe() const;
  // Moves every cleaner setting out of `props`. Errors as Set.
  Status Extract(std::map<std::string, std::string>& props);
};

}  // namespace headrace::broker
