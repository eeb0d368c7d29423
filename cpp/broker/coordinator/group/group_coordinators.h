// The group coordinators of this broker: one GroupCoordinator per partition
// of __consumer_offsets this broker leads (cluster mode), or the single one
// on data_dir/__group_metadata (single node: one partition). Every group API
// asks For(group_id) and gets the coordinator of the group's partition
// (group_partition.h) or the error to answer (coordinator_router.h).
// Cluster-mode coordinators are opened without their own timer thread; the
// router's one timer ("hr-group-timer") ticks all of them.
#pragma once

#include "broker/coordinator/base/coordinator_router.h"
#include "broker/coordinator/group/group_coordinator.h"

namespace headrace::broker::group {

using CoordinatorLookup = RouterLookup<GroupCoordinator>;

class GroupCoordinators final : public CoordinatorRouter<GroupCoordinator> {
 public:
  explicit GroupCoordinators(KafkaError elsewhere)
      : CoordinatorRouter(elsewhere, "hr-group-timer") {}
};

}  // namespace headrace::broker::group
