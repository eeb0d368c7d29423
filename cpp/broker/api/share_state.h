// The share-partition leader's side of durable share state (KIP-932,
// docs/share-groups.md "Durable share state"): where a share-partition's
// state is read from when it is created, initialized, and written after
// acknowledgements, through the share coordinator of its key
// (coordinator/share/share_coordinator.h).
//
// The coordinator of a key is found with ctx.share_coordinators. When there
// is none for the key on this broker (no coordinators, or cluster mode: the
// share coordinator's RPCs between brokers are not built yet), the state is
// kept in memory only, as before: every call below then does nothing and
// returns no commit point.
//
// A change is durable once the coordinator's log is committed up to the
// returned LogCommitPoint (api/group_log_wait.h WhenLogsCommitted): the
// handlers answer an acknowledgement only then, and a ShareFetch that
// created a share-partition answers its first records only once the start
// is stored (a restart then resumes from it, never skipping records handed
// out).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "broker/api/group_log_wait.h"
#include "broker/api/handler.h"
#include "broker/coordinator/share/share_state_records.h"
#include "broker/share/share_registry.h"

namespace headrace::broker {

// What persisting a change left: nothing to wait for, a point to wait for,
// or the error to answer the acknowledgement with (KAFKA_STORAGE_ERROR: the
// state could not be written; FENCED_STATE_EPOCH / FENCED_LEADER_EPOCH: a
// newer writer owns it).
struct ShareStatePersist {
  KafkaError error = KafkaError::kNone;
  std::optional<LogCommitPoint> commit;
};

// Creates `entry`'s share-partition (REQUIRES: entry.mu held, no state
// yet): from the stored state of `key` when there is one, else at
// `start_offset()` (share.auto.offset.reset), stored with
// InitializeShareGroupState.
template <typename StartFn>
ShareStatePersist CreateSharePartition(BrokerContext& ctx, const share::SharePartitionKey& key,
                                       share::ShareRegistry::Entry& entry,
                                       const share::SharePartitionConfig& config,
                                       int32_t leader_epoch, StartFn start_offset);

// Writes `entry`'s current state (REQUIRES: entry.mu held, a state): its
// start offset and snapshot (WriteShareGroupState).
ShareStatePersist PersistSharePartition(BrokerContext& ctx, const share::SharePartitionKey& key,
                                        const share::ShareRegistry::Entry& entry,
                                        int32_t leader_epoch);

// Deletes every stored share-partition state of `group` here
// (DeleteGroups) and forgets its share-partitions; the commit points to
// wait for (empty: nothing stored).
std::vector<LogCommitPoint> DeleteShareState(BrokerContext& ctx, const std::string& group);

namespace share_state_internal {
// The stored state of `key`, if there is a coordinator for it here
// (`*coordinated` says whether there is).
std::optional<share::ShareState> Read(BrokerContext& ctx, const share::SharePartitionKey& key,
                                      bool* coordinated);
ShareStatePersist Initialize(BrokerContext& ctx, const share::SharePartitionKey& key,
                             int64_t start_offset, int32_t leader_epoch);
}  // namespace share_state_internal

template <typename StartFn>
ShareStatePersist CreateSharePartition(BrokerContext& ctx, const share::SharePartitionKey& key,
                                       share::ShareRegistry::Entry& entry,
                                       const share::SharePartitionConfig& config,
                                       int32_t leader_epoch, StartFn start_offset) {
  bool coordinated = false;
  std::optional<share::ShareState> stored = share_state_internal::Read(ctx, key, &coordinated);
  if (stored) {
    entry.state_epoch = stored->state_epoch;
    entry.state.emplace(config, stored->start_offset, stored->batches);
    return {};
  }
  const int64_t start = start_offset();
  entry.state_epoch = 0;
  entry.state.emplace(config, start);
  if (!coordinated) return {};
  return share_state_internal::Initialize(ctx, key, start, leader_epoch);
}

}  // namespace headrace::broker
