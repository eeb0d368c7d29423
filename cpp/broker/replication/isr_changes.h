// The ISR changes the local leaders propose (Partition::ProposeIsr), in the
// form the control plane takes them (docs/cluster.md, isr_changes()): it
// writes each to the partition's state znode with a conditional update and
// the change takes effect only when it comes back through apply_cluster
// (Partition::UpdateIsr). Nothing is applied here.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "broker/partition/partition.h"

namespace headrace::broker::replication {

struct IsrChange {
  std::string topic;
  int32_t partition;
  int32_t leader_epoch;  // the epoch the leader proposed in (fences stale leaders)
  std::vector<int32_t> isr;
  // The broker epoch of each follower's last fetch, where it carried one
  // (KIP-903: the control plane adds no member registered since).
  std::map<int32_t, int64_t> broker_epochs;
  bool operator==(const IsrChange&) const = default;
};

// Asks every partition in `leaders` for an ISR change at `now_ms`
// (Partition::SteadyNowMs() clock) with replica.lag.time.max.ms
// `lag_time_max_ms`. Partitions that are not leaders propose nothing; a
// partition proposes one change once (until its ISR or epoch changes).
std::vector<IsrChange> CollectIsrChanges(const std::vector<std::shared_ptr<Partition>>& leaders,
                                         int64_t now_ms, int64_t lag_time_max_ms);

}  // namespace headrace::broker::replication
