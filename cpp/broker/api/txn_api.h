// What the transaction APIs (InitProducerId with a transactional id,
// AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, ListTransactions,
// DescribeTransactions) share: the coordinator lookup, the version-dependent
// fencing error, and the partition check.
#pragma once

#include <memory>
#include <string>

#include "broker/api/authorize.h"
#include "broker/api/handler.h"
#include "broker/api/partition_checks.h"
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

// Whether `topic` has partition `partition` (api/partition_checks.h).
inline bool TxnPartitionExists(const BrokerContext& ctx, const std::string& topic,
                               int32_t partition) {
  return PartitionExists(ctx, topic, partition);
}

}  // namespace headrace::broker
