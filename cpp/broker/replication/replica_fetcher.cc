#include "broker/replication/replica_fetcher.h"

#include <utility>

#include "broker/config/broker_config.h"
#include "broker/replication/leader_fetcher.h"

namespace headrace::broker::replication {

ReplicaFetcherConfig ReplicaFetcherConfig::FromBrokerConfig(const BrokerConfig& c) {
  ReplicaFetcherConfig out;
  out.fetch_max_bytes = c.replica_fetch_max_bytes;
  out.fetch_response_max_bytes = c.replica_fetch_response_max_bytes;
  out.fetch_wait_max_ms = c.replica_fetch_wait_max_ms;
  out.fetch_min_bytes = c.replica_fetch_min_bytes;
  out.fetch_backoff_ms = c.replica_fetch_backoff_ms;
  out.socket_timeout_ms = c.replica_socket_timeout_ms;
  return out;
}

ReplicaFetcherManager::ReplicaFetcherManager(int32_t local_broker_id, ReplicaFetcherConfig config)
    : local_broker_id_(local_broker_id), config_(config) {}

ReplicaFetcherManager::~ReplicaFetcherManager() { Shutdown(); }

void ReplicaFetcherManager::SetFollowed(std::vector<FollowedPartition> set) {
  std::map<int32_t, std::pair<LeaderEndpoint, std::vector<std::shared_ptr<Partition>>>> by_leader;
  for (FollowedPartition& f : set) {
    if (!f.partition || f.leader_id < 0 || f.leader_id == local_broker_id_) continue;
    auto& entry = by_leader[f.leader_id];
    entry.first = LeaderEndpoint{f.leader_id, f.leader_host, f.leader_port};
    entry.second.push_back(std::move(f.partition));
  }
  std::vector<std::unique_ptr<LeaderFetcher>> retired;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (shut_down_) return;
    for (auto it = fetchers_.begin(); it != fetchers_.end();) {
      auto wanted = by_leader.find(it->first);
      if (wanted == by_leader.end() || !(wanted->second.first == it->second->leader())) {
        retired.push_back(std::move(it->second));
        it = fetchers_.erase(it);
      } else {
        ++it;
      }
    }
    for (auto& [id, entry] : by_leader) {
      auto& fetcher = fetchers_[id];
      if (!fetcher) {
        fetcher = std::make_unique<LeaderFetcher>(local_broker_id_, entry.first, config_, &counters_);
      }
      fetcher->SetPartitions(std::move(entry.second));
    }
  }
  // Outside mu_: a retired fetcher's socket is interrupted and its thread
  // joined (it is at most finishing one append or fsync).
  for (auto& f : retired) f->Stop();
}

void ReplicaFetcherManager::ReplacePartition(const Partition* old,
                                             const std::shared_ptr<Partition>& now) {
  std::lock_guard<std::mutex> l(mu_);
  for (auto& [id, fetcher] : fetchers_) {
    if (fetcher->ReplacePartition(old, now)) return;
  }
}

void ReplicaFetcherManager::Shutdown() {
  std::map<int32_t, std::unique_ptr<LeaderFetcher>> fetchers;
  {
    std::lock_guard<std::mutex> l(mu_);
    shut_down_ = true;
    fetchers.swap(fetchers_);
  }
  for (auto& [id, f] : fetchers) f->Stop();
}

ReplicaFetcherStats ReplicaFetcherManager::stats() const {
  ReplicaFetcherStats s;
  s.connect_attempts = counters_.connect_attempts.load();
  s.connect_failures = counters_.connect_failures.load();
  s.fetch_requests = counters_.fetch_requests.load();
  s.epoch_requests = counters_.epoch_requests.load();
  s.records_appended = counters_.records_appended.load();
  return s;
}

}  // namespace headrace::broker::replication
