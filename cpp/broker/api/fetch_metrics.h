// Fetch's one metrics hook (docs/metrics.md): bytes sent to consumers, by
// topic, counted when the answer is sent (a parked fetch's discarded
// re-reads are not counted).
#pragma once

#include <cstddef>

namespace headrace::broker {

// `targets[t][p].partition` is the partition (or null) answered in
// `resp.responses[t].partitions[p]`.
template <typename Targets, typename Response>
void CountFetchedBytes(const Targets& targets, const Response& resp) {
  for (size_t t = 0; t < resp.responses.size() && t < targets.size(); ++t) {
    const auto& parts = resp.responses[t].partitions;
    for (size_t p = 0; p < parts.size() && p < targets[t].size(); ++p) {
      const auto& partition = targets[t][p].partition;
      if (partition && partition->topic_metrics() && parts[p].records.size() > 0)
        partition->topic_metrics()->AddFetched(parts[p].records.size());
    }
  }
}

}  // namespace headrace::broker
