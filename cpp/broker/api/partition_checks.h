// Small helpers shared by the data-path handlers (Metadata, Produce, Fetch,
// ListOffsets): the leader-epoch fencing check (KIP-320) and the isolation
// level; and the partition check of the offset commits (OffsetCommit,
// TxnOffsetCommit).
#pragma once

#include <cstdint>
#include <cstring>

#include "broker/api/handler.h"
#include "broker/base/kafka_error.h"
#include "broker/partition/partition.h"
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

// Whether `topic` exists with a partition `partition`: offsets committed for
// anything else are answered UNKNOWN_TOPIC_OR_PARTITION.
// Cluster mode asks the cluster view (as Kafka's metadata cache): a group's
// coordinator need not hold a replica of the topics its group commits.
inline bool PartitionExists(BrokerContext& ctx, const std::string& topic, int32_t partition) {
  if (partition < 0) return false;
  if (ClusterState* cluster = ctx.state->cluster()) {
    auto view = cluster->view();
    const TopicView* t = view->FindTopic(topic);
    return t != nullptr && partition < static_cast<int32_t>(t->partitions.size());
  }
  auto t = ctx.topics().FindTopic(topic);
  return t && partition < t->partition_count();
}

}  // namespace headrace::broker
