// Replica fetchers: a follower broker copies the partitions it follows from
// their leaders with the Kafka wire protocol (docs/cluster.md, "Followers and
// the ISR"). One fetcher thread per leader broker (Kafka's
// num.replica.fetchers=1), one blocking TCP connection each.
//
// For each followed partition, in its current leader epoch:
//   1. truncation (KIP-101/279): OffsetForLeaderEpoch (v3, replica_id = own
//      id) for the follower's latest cached epoch, then
//      Partition::TruncateByEpoch; asked again with the older epoch while the
//      leader answers one the follower never had;
//   2. fetching: Fetch v12 (replica_id = own id, current_leader_epoch, the
//      LEO as fetch offset, last_fetched_epoch), AppendAsFollower with the
//      leader's offsets and epochs, SetHighWatermarkFromLeader; when the
//      partition's commit requires fsync (headrace.acks.all.fsync) the
//      broker's flusher fsyncs what was appended while the next fetch runs,
//      and every fetch reports the flushed offset apart from the fetch
//      offset (the tagged field HeadraceFlushedOffset, which the leader's HW
//      takes); at most one fetch's data is unflushed when the next is sent
//      (LeaderFetcher::FlushBehind). Without a flusher (tests) it is
//      FlushLog()ged before the next fetch and the fetch offset stands for it.
//      A partition throttled on this follower (follower.replication.
//      throttled.replicas, not in the ISR) is left out of the fetches
//      while the follower's throttled rate is over
//      follower.replication.throttled.rate (replication_quota.h).
// A partition whose leader epoch changes (BecomeFollower) starts again at 1.
//
// Errors: NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH
// and other partition errors: the partition waits replica.fetch.backoff.ms
// and retries (the control plane sends the new assignment); a diverging
// epoch in a fetch answer truncates to it; OFFSET_OUT_OF_RANGE below the
// leader's log start empties the log and starts there
// (TruncateFullyAndStartAt), past the leader's end truncates again; a
// failed connection is closed and reopened after the backoff; a local
// storage error stops that partition (it is offline until a restart). Never
// a busy loop: every retry waits the backoff. Logged: INFO once when a
// partition starts following a leader in an epoch, WARN for errors
// summarised per fetcher (the first at once, then at most one line per 30 s
// with a count).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "broker/partition/partition.h"

namespace headrace::broker {
struct BrokerConfig;
}

namespace headrace::broker::replication {

class LeaderFetcher;
class ReplicationQuota;
struct InterBrokerSecurity;

struct ReplicaFetcherConfig {
  int32_t fetch_max_bytes = 1048576;            // replica.fetch.max.bytes (per partition)
  int32_t fetch_response_max_bytes = 10485760;  // replica.fetch.response.max.bytes
  int32_t fetch_wait_max_ms = 500;              // replica.fetch.wait.max.ms
  int32_t fetch_min_bytes = 1;                  // replica.fetch.min.bytes
  int32_t fetch_backoff_ms = 1000;              // replica.fetch.backoff.ms
  // replica.socket.timeout.ms (>= fetch_wait_max_ms): a connect, or a
  // request's answer, that takes longer fails; the connection is closed and
  // reopened after fetch_backoff_ms. So a fetch in flight when the network
  // partitions does not wait out TCP's retransmissions after it heals.
  int32_t socket_timeout_ms = 30000;
  // This broker's follower-side replication throttle (replication_quota.h;
  // null = none). Outlives the manager.
  ReplicationQuota* follower_quota = nullptr;
  // How connections to leaders are secured (inter_broker_security.h); null =
  // PLAINTEXT.
  std::shared_ptr<const InterBrokerSecurity> security;

  static ReplicaFetcherConfig FromBrokerConfig(const BrokerConfig& config);
};

// A partition this broker follows, and where its leader is.
struct FollowedPartition {
  std::shared_ptr<Partition> partition;  // BecomeFollower already applied
  int32_t leader_id;
  std::string leader_host;
  int32_t leader_port;
};

// What the fetchers did so far (tests, metrics).
struct ReplicaFetcherStats {
  uint64_t connect_attempts = 0;
  uint64_t connect_failures = 0;
  uint64_t fetch_requests = 0;
  uint64_t epoch_requests = 0;     // OffsetForLeaderEpoch requests
  uint64_t records_appended = 0;
};

// Shared by the fetcher threads of one manager.
struct ReplicaFetcherCounters {
  std::atomic<uint64_t> connect_attempts{0};
  std::atomic<uint64_t> connect_failures{0};
  std::atomic<uint64_t> fetch_requests{0};
  std::atomic<uint64_t> epoch_requests{0};
  std::atomic<uint64_t> records_appended{0};
  // This broker's epoch (KIP-380), sent with every fetch; -1 = not known.
  std::atomic<int64_t> broker_epoch{-1};
};

class ReplicaFetcherManager {
 public:
  ReplicaFetcherManager(int32_t local_broker_id, ReplicaFetcherConfig config);
  ~ReplicaFetcherManager();  // Shutdown()
  ReplicaFetcherManager(const ReplicaFetcherManager&) = delete;
  ReplicaFetcherManager& operator=(const ReplicaFetcherManager&) = delete;

  // Replaces the whole set of followed partitions: partitions not in `set`
  // stop being fetched; a leader no longer followed has its fetcher stopped
  // (its socket interrupted, its thread joined); a leader whose address
  // changed gets a new connection. A partition is followed in the leader
  // epoch it has (the control plane calls BecomeFollower before this).
  // Thread-safe; returns without waiting for any fetch. Ignored after
  // Shutdown().
  void SetFollowed(std::vector<FollowedPartition> set);
  // This broker's epoch (its registration's, from the cluster view): the
  // fetches sent from now on carry it. Thread-safe.
  void SetBrokerEpoch(int64_t epoch) { counters_.broker_epoch.store(epoch); }
  // A followed partition object replaced by another for the same replica
  // (LogDirMover's swap): the fetcher of its leader fetches into `now` from
  // then on, starting with the truncation step. No-op when `old` is not
  // followed. Thread-safe; returns at once.
  void ReplacePartition(const Partition* old, const std::shared_ptr<Partition>& now);
  // Stops every fetcher and joins its thread. Idempotent.
  void Shutdown();

  ReplicaFetcherStats stats() const;
  int32_t local_broker_id() const { return local_broker_id_; }

 private:
  const int32_t local_broker_id_;
  const ReplicaFetcherConfig config_;
  ReplicaFetcherCounters counters_;
  mutable std::mutex mu_;  // guards the members below; never held by a fetcher thread
  bool shut_down_ = false;
  std::map<int32_t, std::unique_ptr<LeaderFetcher>> fetchers_;  // by leader id
};

}  // namespace headrace::broker::replication
