// Replication throttles (Kafka's KIP-73): while replicas are being copied
// (a reassignment, a broker catching up) the copy may be held to a byte
// rate so that it does not starve clients. docs/cluster.md, "Replication
// throttles".
//
// Which replicas: the topic keys leader.replication.throttled.replicas and
// follower.replication.throttled.replicas ("*" or partition:broker pairs;
// Partition::ReplicationThrottled). How fast: the dynamic broker keys
// leader.replication.throttled.rate (bytes/s this broker serves to
// throttled followers) and follower.replication.throttled.rate (bytes/s it
// fetches for throttled partitions it follows), measured over
// replication.quota.window.num windows of replication.quota.window.size.seconds.
// As in Kafka, a replica in the ISR is never throttled, and a throttled
// replica is held back only while the broker's measured rate is over the
// bound: the leader then returns no records for it (the follower's fetch
// waits out its max wait), the follower leaves it out of its fetches.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "broker/config/config_table.h"
#include "broker/security/quota/sampled_rate.h"

namespace headrace::broker::replication {

struct ReplicationQuotaConfig {
  // Kafka's default, Long.MAX_VALUE: unlimited.
  int64_t leader_rate = INT64_MAX;    // leader.replication.throttled.rate
  int64_t follower_rate = INT64_MAX;  // follower.replication.throttled.rate
  int32_t window_num = 11;            // replication.quota.window.num
  int32_t window_size_seconds = 1;    // replication.quota.window.size.seconds

  Status Set(const std::string& key, const std::string& value);
  // Moves every key of this family out of `props`. Errors as Set.
  Status Extract(std::map<std::string, std::string>& props);
};
const std::vector<ConfigKey<ReplicationQuotaConfig>>& ReplicationQuotaKeys();

// One direction's throttle (leader or follower side of this broker).
class ReplicationQuota {
 public:
  ReplicationQuota(int32_t window_num, int32_t window_size_seconds, int64_t bytes_per_second);
  // Dynamic change of the bound (INT64_MAX = unlimited).
  void SetRate(int64_t bytes_per_second) { bound_.store(bytes_per_second); }
  bool unlimited() const { return bound_.load(std::memory_order_relaxed) == INT64_MAX; }
  // The measured rate of throttled bytes is over the bound.
  bool Exceeded() const;
  // Counts bytes copied for throttled replicas.
  void Record(int64_t bytes);
  // The most one throttled read may take: one window's worth at the bound
  // (so the measured rate follows the bound rather than the fetch size).
  int64_t MaxReadBytes() const;

 private:
  std::atomic<int64_t> bound_;
  const int32_t window_size_seconds_;
  mutable std::mutex mu_;             // guards rate_
  mutable quota::SampledRate rate_;   // Kafka's windows, as client quotas

};

// Both sides, as BrokerContext and the replica fetchers hold them.
struct ReplicationQuotas {
  explicit ReplicationQuotas(const ReplicationQuotaConfig& c)
      : leader(c.window_num, c.window_size_seconds, c.leader_rate),
        follower(c.window_num, c.window_size_seconds, c.follower_rate) {}
  void Reconfigure(const ReplicationQuotaConfig& c) {
    leader.SetRate(c.leader_rate);
    follower.SetRate(c.follower_rate);
  }
  ReplicationQuota leader;
  ReplicationQuota follower;
};

}  // namespace headrace::broker::replication
