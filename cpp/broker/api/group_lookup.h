// How a group API finds the coordinator of a group: the broker's router
// (coordinator/group/group_coordinators.h) or, in a bare test context without one,
// COORDINATOR_NOT_AVAILABLE.
#pragma once

#include <string_view>

#include "broker/api/handler.h"
#include "broker/coordinator/group/group_coordinators.h"

namespace headrace::broker {

inline group::CoordinatorLookup GroupCoordinatorFor(const BrokerContext& ctx,
                                                    std::string_view group_id) {
  if (ctx.group_coordinators == nullptr) {
    group::CoordinatorLookup none;
    none.error = KafkaError::kCoordinatorNotAvailable;
    return none;
  }
  return ctx.group_coordinators->For(group_id);
}

// Cluster mode: asks the control plane to create __consumer_offsets
// (offsets.topic.num.partitions partitions, offsets.topic.replication.factor
// replicas, compacted) unless it exists; what the first FindCoordinator for
// a group does. Nothing on a single node. find_coordinator.cc.
void EnsureConsumerOffsetsTopic(BrokerContext& ctx);

}  // namespace headrace::broker
