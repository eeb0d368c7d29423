// The transaction coordinators of this broker: one TxnCoordinator per
// partition of __transaction_state this broker leads (cluster mode; the
// topic has transaction.state.log.num.partitions partitions, fixed when it
// is created), or the single one on data_dir/__transaction_state (single
// node: one partition). A transactional id lives in partition
// abs(Java hashCode(id)) % partitions, as in Kafka
// (TransactionStateManager.partitionFor, the function groups use too); every
// transaction API asks For(transactional_id) and gets that partition's
// coordinator or the error to answer (coordinator/base/coordinator_router.h):
// NOT_COORDINATOR when another broker leads it.
//
// Cheap per partition: cluster-mode coordinators share the router's one
// timer ("hr-txn-timer", every kTxnTimerPeriodMs), one persist executor, the
// broker's marker writer and its producer id allocator.
#pragma once

#include "broker/coordinator/base/coordinator_router.h"
#include "broker/coordinator/txn/txn_coordinator.h"

namespace headrace::broker::txn {

using TxnCoordinatorLookup = group::RouterLookup<TxnCoordinator>;

class TxnCoordinators final : public group::CoordinatorRouter<TxnCoordinator> {
 public:
  explicit TxnCoordinators(KafkaError elsewhere) : CoordinatorRouter(elsewhere, "hr-txn-timer") {}
};

}  // namespace headrace::broker::txn
