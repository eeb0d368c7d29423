// Small helpers shared by the data-path handlers (Metadata, Produce, Fetch,
// ListOffsets): the leader-epoch fencing check (KIP-320) and the isolation
// level.
#pragma once

#include <cstdint>
#include <cstring>

#include "broker/kafka_error.h"
#include "broker/partition.h"
#include "common/uuid.h"
#include "protocol/wire.h"

namespace headrace::broker {

// KIP-320: a client that sends the leader epoch it knows is fenced when it is
// older than ours and told to wait when it is newer; -1 skips the check.
inline KafkaError CheckLeaderEpoch(int32_t requested, const Partition& partition) {
  if (requested < 0) return KafkaError::kNone;
  int32_t current = partition.leader_epoch().value();
  if (requested < current) return KafkaError::kFencedLeaderEpoch;
  if (requested > current) return KafkaError::kUnknownLeaderEpoch;
  return KafkaError::kNone;
}

// The wire's isolation level: 1 is read_committed, anything else
// read_uncommitted.
inline IsolationLevel ToIsolationLevel(int8_t wire) {
  return wire == 1 ? IsolationLevel::kReadCommitted : IsolationLevel::kReadUncommitted;
}

}  // namespace headrace::broker
