// One replica fetcher thread: copies the partitions this broker follows from
// one leader broker over one connection (replica_fetcher.h states the
// protocol and the error handling). Internal to ReplicaFetcherManager.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "broker/base/kafka_error.h"
#include "broker/partition/partition.h"
#include "broker/replication/error_summary.h"
#include "broker/replication/leader_connection.h"
#include "broker/replication/replica_fetcher.h"

namespace headrace::broker::replication {

// Where a leader broker listens.
struct LeaderEndpoint {
  int32_t id = -1;
  std::string host;
  int32_t port = 0;
  bool operator==(const LeaderEndpoint&) const = default;
};

class LeaderFetcher {
 public:
  LeaderFetcher(int32_t local_broker_id, LeaderEndpoint leader, const ReplicaFetcherConfig& config,
                ReplicaFetcherCounters* counters);
  ~LeaderFetcher();  // Stop()
  LeaderFetcher(const LeaderFetcher&) = delete;
  LeaderFetcher& operator=(const LeaderFetcher&) = delete;

  // Replaces the partitions fetched from this leader. Thread-safe; returns at once.
  void SetPartitions(std::vector<std::shared_ptr<Partition>> partitions);
  // Replaces one assigned partition object by another (a replica swapped
  // for its copy in another log directory); false when `old` is not
  // assigned here. Thread-safe; returns at once.
  bool ReplacePartition(const Partition* old, const std::shared_ptr<Partition>& now);
  // Interrupts the connection and joins the thread. Idempotent.
  void Stop();
  const LeaderEndpoint& leader() const { return leader_; }

 private:
  using Clock = std::chrono::steady_clock;
  // The thread's view of one partition.
  struct Followed {
    std::shared_ptr<Partition> partition;
    LeaderEpoch epoch{-1};          // the epoch it is followed in
    bool needs_truncation = true;   // ask OffsetForLeaderEpoch before fetching
    bool announced = false;         // the INFO line for this epoch was written
    bool failed = false;            // local storage error: not fetched any more
    Clock::time_point retry_at{};   // backoff after an error
    // With commit_requires_fsync and a flusher: the flushed offset the
    // partition must reach before it is fetched again (FlushBehind).
    Offset must_flush{-1};
  };

  void Run();
  // Takes the assignment and epoch changes into followed_; false when stopping.
  bool Refresh();
  bool Stopping();
  // Waits until `until` (or a new assignment, or Stop).
  void WaitUntil(Clock::time_point until);
  // One OffsetForLeaderEpoch round for `list`; non-OK = the connection failed.
  Status TruncateRound(const std::vector<Followed*>& list);
  // One Fetch round for `list`; non-OK = the connection failed.
  Status FetchRound(const std::vector<Followed*>& list);
  // A partition error from the leader or from the local partition: back off.
  // Notes the error and delays the partition's next attempt: the fetch
  // backoff, or kViewLagRetryMs for UNKNOWN_LEADER_EPOCH /
  // NOT_LEADER_OR_FOLLOWER (a leader that has not applied its view yet).
  static constexpr int32_t kViewLagRetryMs = 50;
  void PartitionError(Followed& f, const std::string& what,
                      KafkaError error = KafkaError::kUnknownServerError);
  void Announce(Followed& f);
  // The follower's flush pipeline (docs/cluster.md, "Followers and the
  // ISR"): the flusher fsyncs what a fetch appended while the next fetch
  // runs, and each fetch reports the flushed offset apart from the fetch
  // offset. At most one fetch's data is unflushed when the next is sent
  // (a fetch that appended sets must_flush to its own fetch offset), and
  // before a long poll everything is (an answer with nothing new sets it to
  // the log end) — so a stuck fsync stops the fetching, and the leader's
  // ISR rule drops this replica, as when the fetcher flushed inline.
  static bool FlushBehind(const Followed& f);
  // Some followed partition has appended data not yet flushed: its flushed
  // offset will move soon, so the next fetch must not be parked.
  bool AnyFlushPending() const;
  // How long a wait for a flush lasts before the thread looks at its
  // assignment and Stop again.
  static constexpr std::chrono::milliseconds kFlushWaitSlice{100};
  // Follower-side replication throttle applies to `f` (replication_quota.h).
  bool Throttled(const Followed& f) const;
  // How soon a partition held back by the throttle is looked at again.
  static constexpr std::chrono::milliseconds kThrottleRecheck{100};
  // The partitions one request asks about, by (topic, partition).
  using Asked = std::map<std::pair<std::string, int32_t>, Followed*>;

  const int32_t local_broker_id_;
  const LeaderEndpoint leader_;
  const ReplicaFetcherConfig config_;
  ReplicaFetcherCounters* const counters_;

  std::mutex mu_;  // guards the members below
  std::condition_variable cv_;
  bool stopping_ = false;
  uint64_t generation_ = 0;  // bumped by SetPartitions
  std::vector<std::shared_ptr<Partition>> assigned_;

  // The fetcher thread's own state.
  uint64_t seen_generation_ = ~uint64_t{0};
  std::map<const Partition*, Followed> followed_;
  uint64_t rounds_ = 0;  // fetch rounds so far: where the next one starts asking
  LeaderConnection conn_;
  ErrorSummary errors_;
  bool pass_had_error_ = false;  // a partition error in the current pass
  bool last_round_appended_ = false;  // the last FetchRound appended records
  bool waited_for_flush_ = false;     // the last pass waited for a flush (Run)
  std::thread thread_;  // last: starts after everything above exists
};

}  // namespace headrace::broker::replication
