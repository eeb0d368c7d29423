// What the transaction APIs (InitProducerId with a transactional id,
// AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, ListTransactions,
// DescribeTransactions) share: the coordinator lookup, the version-dependent
// fencing error, and the partition check.
#pragma once

#include <memory>
#include <string>

#include "broker/api/authorize.h"
#include "broker/api/handler.h"
#include "broker/kafka_error.h"
#include "broker/txn/txn_coordinator.h"

namespace headrace::broker {

// PRODUCER_FENCED exists from the API version given (KIP-588); older
// versions are told INVALID_PRODUCER_EPOCH, as Kafka does.
inline KafkaError TxnErrorForVersion(KafkaError e, int16_t version, int16_t first_fenced_version) {
  if (e == KafkaError::kProducerFenced && version < first_fenced_version)
    return KafkaError::kInvalidProducerEpoch;
  return e;
}

// Whether `topic` has partition `partition` (single node: the topic
// registry; cluster mode: the cluster view).
inline bool TxnPartitionExists(const BrokerContext& ctx, const std::string& topic,
                               int32_t partition) {
  if (partition < 0) return false;
  if (ClusterState* cluster = ctx.state->cluster()) {
    auto view = cluster->view();
    const TopicView* t = view->FindTopic(topic);
    return t != nullptr && partition < static_cast<int32_t>(t->partitions.size());
  }
  std::shared_ptr<const Topic> t = ctx.topics().FindTopic(topic);
  return t != nullptr && partition < t->partition_count();
}

}  // namespace headrace::broker
