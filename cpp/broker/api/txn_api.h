// What the transaction APIs (InitProducerId with a transactional id,
// AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, ListTransactions,
// DescribeTransactions) share: the coordinator lookup by transactional id,
// the version-dependent fencing error, and the partition check.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "broker/api/authorize.h"
#include "broker/api/handler.h"
#include "broker/base/kafka_error.h"
#include "broker/coordinator/txn/txn_coordinators.h"

namespace headrace::broker {

// The coordinator of `transactional_id` here (the broker's router,
// coordinator/txn/txn_coordinators.h), or the error to answer: NOT_COORDINATOR when
// another broker leads its partition of __transaction_state,
// COORDINATOR_NOT_AVAILABLE when the topic does not exist yet (or in a bare
// test context without a router).
inline txn::TxnCoordinatorLookup TxnCoordinatorFor(const BrokerContext& ctx,
                                                   std::string_view transactional_id) {
  if (ctx.txn_coordinators == nullptr) {
    txn::TxnCoordinatorLookup none;
    none.error = KafkaError::kCoordinatorNotAvailable;
    return none;
  }
  return ctx.txn_coordinators->For(transactional_id);
}

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
