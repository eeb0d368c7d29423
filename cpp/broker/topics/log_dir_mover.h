// LogDirMover: moves partitions between log directories (AlterReplicaLogDirs,
// Kafka's "-future" replica), one at a time on its own thread, while they
// keep serving. For partition P moving to directory T:
//
//   1. copy    F = a new log in T/<topic>-<p>.<hex>-future, filled from P's
//              log (batches with their offsets and epochs, as a follower
//              copies its leader) until it is within one read of P's end;
//              P keeps taking produce and fetch meanwhile.
//   2. seal    under the registry's admin lock: P stops taking appends (it
//              becomes a follower with no leader, so a producer gets the
//              retriable NOT_LEADER_OR_FOLLOWER and retries), F copies the
//              rest, F and P are closed (flushed, fsynced).
//   3. commit  rename P's dir to "...-delete" (fsync its parent), then F's
//              to T/<topic>-<p> (fsync T): the second rename is the commit.
//   4. swap    the partition reopened from T is published in place of P;
//              the old copy is removed in the background.
//
// Crash recovery (TopicRegistry::ScanDirs): a "-future" dir whose original
// still exists is dropped (the crash came before step 3); one whose
// original is gone is renamed into place (the crash came between the two
// renames: the copy was complete before the first). So a crash at any
// point leaves exactly one complete copy.
//
// Cluster mode (docs/cluster.md, "Moving a replica between log
// directories"): the move is local to this broker, whether it leads or
// follows the partition. The copy follows the source through role changes
// (they apply to the source until the seal); a source truncated by its
// replica fetcher below the copy is copied again (Diverged). From the seal
// to the swap the registry's roles_mutex() holds role changes back; the
// copy is given the source's role (leader: same epoch, replicas and ISR;
// follower: same leader) and HW, and a follower's replica fetcher is
// pointed at it (TopicRegistry's replica swap hook). A partition deleted or
// reassigned away during the move cancels it (the copy is dropped).
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "broker/partition/partition.h"
#include "broker/topics/topic_registry.h"

namespace headrace::broker {

class LogDirMover {
 public:
  explicit LogDirMover(TopicRegistry* registry);
  ~LogDirMover();  // Stop()

  // Queues the move of `tp` to directory `dir` (once per partition: a later
  // request for a queued partition changes its target). Returns at once.
  void Enqueue(const TopicPartition& tp, int dir);
  // Moves queued or running, up to the running one's swap: a reader that
  // lists the published partitions and then these never sees a partition
  // both current and future in the target, nor in neither directory.
  std::vector<TopicRegistry::FutureReplica> Futures() const;
  // The target of tp's queued or running move, or -1.
  int TargetOf(const TopicPartition& tp) const;
  void Drain();
  // Abandons the running copy (its "-future" dir is dropped at the next
  // start) and the queue. Idempotent.
  void Stop();

 private:
  struct Job {
    TopicPartition tp;
    int dir = -1;
    std::shared_ptr<Partition> source;
    std::shared_ptr<Partition> future;
    // Set just before the copy is published as the partition: from then on
    // it is the current replica, no longer a future one (Futures).
    bool swapped = false;
  };
  void Loop();
  Status Move(Job& job);
  // Copies from job.source into job.future until the future is within
  // `slack` bytes of the source's end (0: up to it).
  Status CatchUp(Job& job, int64_t slack);
  Status CommitLocked(Job& job, const std::string& future_path);

  TopicRegistry* const registry_;
  mutable std::mutex mu_;  // guards the fields below
  std::condition_variable cv_;
  std::deque<Job> queue_;
  std::optional<Job> running_;
  bool stopping_ = false;
  std::mutex join_mu_;
  std::thread thread_;
};

}  // namespace headrace::broker
