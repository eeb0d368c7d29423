// The share-partition leader's side of durable share state (KIP-932,
// docs/share-groups.md "Durable share state"): where a share-partition's
// state is read from when it is created, initialized, and written after
// acknowledgements, through the share coordinator of its key
// (coordinator/share/share_coordinator.h).
//
// Where the coordinator of a key runs:
//   - here (a single node; in a cluster, when this broker leads the key's
//     partition of __share_group_state): called in process, synchronously;
//     a change is durable once the coordinator's log is committed up to the
//     returned LogCommitPoint (api/group_log_wait.h);
//   - on another broker (cluster): ReadShareGroupState /
//     InitializeShareGroupState / WriteShareGroupState through
//     ShareStateClient (api/share_state_client.h); a change is durable when
//     its SharePending completes. A share-partition whose state is being
//     read is "loading": a ShareFetch gets no records from it until it is
//     loaded (a few ms);
//   - nowhere yet (cluster: __share_group_state does not exist, whose
//     creation is then requested, or its partition has no leader): loading.
// Without share coordinators at all (a bare handler test context), the
// state is kept in memory only.
//
// A share-partition is loaded under its partition's leader epoch: after
// this broker lost and regained the leadership, it is read again (what the
// other leaders acknowledged meanwhile is in the store, not in memory).
// The handlers answer an acknowledgement once its write is durable, and a
// ShareFetch that created a share-partition answers its first records
// only once the start is stored (a restart then resumes from it, never
// skipping records handed out).
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "broker/api/group_log_wait.h"
#include "broker/api/handler.h"
#include "broker/coordinator/share/share_state_records.h"
#include "broker/share/share_registry.h"

namespace headrace::broker {

// A remote change's outcome, completed once (by ShareStateClient's thread).
class SharePending {
 public:
  void Complete(KafkaError e);
  // Calls `fn(error)` once complete: at once if it is, else on the
  // completing thread.
  void Then(std::function<void(KafkaError)> fn);

 private:
  std::mutex mu_;
  bool done_ = false;                                    // guarded by mu_
  KafkaError error_ = KafkaError::kNone;                 // guarded by mu_
  std::vector<std::function<void(KafkaError)>> then_;    // guarded by mu_
};

// What persisting a change left to wait for, or the error to answer it
// with (KAFKA_STORAGE_ERROR: the state could not be written; REQUEST_TIMED_OUT,
// COORDINATOR_NOT_AVAILABLE: no coordinator reachable; FENCED_STATE_EPOCH /
// FENCED_LEADER_EPOCH: a newer writer owns the state).
struct ShareStatePersist {
  KafkaError error = KafkaError::kNone;
  std::optional<LogCommitPoint> commit;    // a local coordinator's log
  std::shared_ptr<SharePending> pending;   // a remote coordinator's answer
};

// Everything an answer waits for.
struct ShareWaits {
  std::vector<LogCommitPoint> local;
  std::vector<std::shared_ptr<SharePending>> remote;
  void Add(const ShareStatePersist& p) {
    if (p.commit) local.push_back(*p.commit);
    if (p.pending) remote.push_back(p.pending);
  }
  bool empty() const { return local.empty() && remote.empty(); }
};

// Calls `done` once every wait of `waits` is over: NONE, or the first
// error. Exactly once; on `executor` (null: on the completing thread).
void WhenShareStateDone(BrokerContext& ctx, ShareWaits waits,
                        std::shared_ptr<net::LoopExecutor> executor,
                        std::function<void(KafkaError)> done);

// Replies `resp` once `waits` are over; on an error `fail(resp, error)`
// marks the answer first. The reply is sent on the request's I/O thread.
template <typename Resp, typename Fail>
void ReplyWhenShareStateDone(BrokerContext& ctx, ShareWaits waits, Request req, Resp resp,
                             Fail fail) {
  if (waits.empty()) return req.Reply(resp);
  auto executor = req.executor();
  auto answer = std::make_shared<std::pair<Request, Resp>>(std::move(req), std::move(resp));
  WhenShareStateDone(ctx, std::move(waits), std::move(executor), [answer, fail](KafkaError e) {
    if (e != KafkaError::kNone) fail(answer->second, e);
    answer->first.Reply(answer->second);
  });
}

// Whether a share-partition can be used now.
enum class ShareLoad {
  kReady,    // entry.state holds it, loaded under the current leader epoch
  kLoading,  // being read from (or waiting for) its coordinator: no records yet
};

// Makes `entry` hold the share-partition of `key` loaded under
// `leader_epoch` (REQUIRES: entry->mu held): ready at once when it does,
// unless `revalidate` and it is idle (no record acquired, no write in
// flight: its memory then equals its store) — a member opened a share
// session, and the stored state may have been reset meanwhile
// (AlterShareGroupOffsets on another broker); else from the stored state,
// or at `start_offset()`
// (share.auto.offset.reset) stored with InitializeShareGroupState when
// there is none. `*persist` gets what the answer must wait for (a local
// Initialize) or an error.
ShareLoad EnsureSharePartition(BrokerContext& ctx, const share::SharePartitionKey& key,
                               const std::shared_ptr<share::ShareRegistry::Entry>& entry,
                               const share::SharePartitionConfig& config, int32_t leader_epoch,
                               bool revalidate, const std::function<int64_t()>& start_offset,
                               ShareStatePersist* persist);

// Writes `entry`'s current state (REQUIRES: entry.mu held, a state): its
// start offset and snapshot (WriteShareGroupState).
ShareStatePersist PersistSharePartition(BrokerContext& ctx, const share::SharePartitionKey& key,
                                        const share::ShareRegistry::Entry& entry);

// A share-partition's stored start (DescribeShareGroupOffsets): start
// offset -1 when it was never initialized; `error` when its coordinator
// cannot be asked (COORDINATOR_NOT_AVAILABLE, REQUEST_TIMED_OUT, ...).
struct ShareStateSummary {
  KafkaError error = KafkaError::kNone;
  int32_t state_epoch = 0;
  int64_t start_offset = -1;
  int32_t leader_epoch = -1;
};
// Calls `done` exactly once (at once for a local coordinator, else on the
// ShareStateClient's thread).
void ReadShareStateSummary(BrokerContext& ctx, const share::SharePartitionKey& key,
                           std::function<void(ShareStateSummary)> done);

// AlterShareGroupOffsets: stores `start_offset` as the share-partition's
// start with no batches under a new state epoch (the stored one + 1), so a
// leader holding the old state is fenced at its next write and reads the
// new one; forgets the share-partition on this broker at once. `done`
// exactly once: NONE once committed, or the error.
void ResetShareState(BrokerContext& ctx, const share::SharePartitionKey& key,
                     int64_t start_offset, std::function<void(KafkaError)> done);

// DeleteShareGroupOffsets: deletes the share-partition's stored state
// (DeleteShareGroupState when its coordinator is another broker) and
// forgets it on this broker; its next use starts where
// share.auto.offset.reset says (a leader elsewhere reads it again when a
// member opens a share session with it, as after ResetShareState). `done`
// exactly once: NONE once committed, or the error.
void DeleteShareStateOf(BrokerContext& ctx, const share::SharePartitionKey& key,
                        std::function<void(KafkaError)> done);

// An answer filled in by asynchronous parts (share-state reads and writes
// on other brokers): each part holds a share, and the last one to Release
// replies on the request's I/O thread. Parts write into `resp` under `mu`.
template <typename Resp>
struct PendingAnswer {
  explicit PendingAnswer(Request r) : req(std::move(r)) {}
  Request req;
  Resp resp;
  std::mutex mu;
  size_t outstanding = 1;  // the handler's own share

  void Hold(size_t parts) {
    std::lock_guard<std::mutex> lock(mu);
    outstanding += parts;
  }
  // The callback of one part: `set(resp, error)` under `mu`, then Release.
  template <typename Set>
  static std::function<void(KafkaError)> Part(const std::shared_ptr<PendingAnswer>& p, Set set) {
    return [p, set](KafkaError e) {
      {
        std::lock_guard<std::mutex> lock(p->mu);
        set(p->resp, e);
      }
      Release(p);
    };
  }
  static void Release(const std::shared_ptr<PendingAnswer>& p) {
    {
      std::lock_guard<std::mutex> lock(p->mu);
      if (--p->outstanding > 0) return;
    }
    std::shared_ptr<net::LoopExecutor> executor = p->req.executor();
    if (executor) {
      executor->Post([p] { p->req.Reply(p->resp); });
    } else {
      p->req.Reply(p->resp);
    }
  }
};

// Deletes every stored share-partition state of `group` on this broker's
// coordinators (DeleteGroups) and forgets its share-partitions here; the
// commit points to wait for (empty: nothing stored here).
std::vector<LogCommitPoint> DeleteShareState(BrokerContext& ctx, const std::string& group);

}  // namespace headrace::broker
