// The share-partitions this broker leads (KIP-932): one SharePartition per
// (share group, topic partition), created by the first ShareFetch of the
// group for a partition led here, from the state its share coordinator
// stored (api/share_state.h) when there is one; docs/share-groups.md.
//
// Threading: thread-safe. The registry's mutex guards the map; each entry
// has its own mutex, which a caller holds while it uses the entry's
// SharePartition (Acquire/Acknowledge are O(runs touched)). Never take the
// registry's mutex while holding an entry's.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "broker/share/share_partition.h"
#include "common/uuid.h"

namespace headrace::broker::share {

struct SharePartitionKey {
  std::string group;
  Uuid topic_id;
  int32_t partition = 0;
  auto operator<=>(const SharePartitionKey&) const = default;
};

class ShareRegistry {
 public:
  struct Entry {
    std::mutex mu;
    std::optional<SharePartition> state;  // guarded by mu; empty until first used
    int32_t state_epoch = 0;              // guarded by mu; the stored state's
    // The partition leader epoch `state` was loaded under, and the one a
    // load from the share coordinator is in flight for (-1: none).
    int32_t leader_epoch = -1;            // guarded by mu
    int32_t loading_epoch = -1;           // guarded by mu
    // Writes of this share-partition's state sent to a remote coordinator
    // and not answered yet (it is not read back from the store meanwhile).
    int32_t writes_in_flight = 0;         // guarded by mu

    // The share-partition, created at `start_offset` if it is new.
    // REQUIRES: mu held.
    SharePartition& Ensure(const SharePartitionConfig& config, int64_t start_offset) {
      if (!state) state.emplace(config, start_offset);
      return *state;
    }
  };

  // The entry of `key`, created (without state) if absent. Never null.
  std::shared_ptr<Entry> Get(const SharePartitionKey& key);
  // The entry of `key`, or null.
  std::shared_ptr<Entry> Find(const SharePartitionKey& key) const;

  // Releases every record `member` of `group` holds on this broker (its
  // share session closed, or it left the group): RELEASE, so the records
  // are available again (archived at the delivery limit). Returns how many.
  int64_t ReleaseMember(const std::string& group, const std::string& member);

  // Forgets every share-partition of `group` (the group was deleted).
  void DropGroup(const std::string& group);

  // Sums over every share-partition (metrics, tests).
  struct Totals {
    int64_t share_partitions = 0;
    int64_t acquired_now = 0;
    SharePartition::Counters counters;
  };
  Totals Sum() const;

 private:
  // The entries of `group`. REQUIRES: mu_ not held.
  std::vector<std::shared_ptr<Entry>> EntriesOf(const std::string& group) const;

  mutable std::mutex mu_;
  std::map<SharePartitionKey, std::shared_ptr<Entry>> entries_;
};

}  // namespace headrace::broker::share
