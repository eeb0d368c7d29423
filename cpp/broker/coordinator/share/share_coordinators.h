// The share coordinators of this broker: one ShareCoordinator per partition
// of __share_group_state this broker leads (cluster mode), or the single
// one on data_dir/__share_group_state (single node: one partition). A
// share-partition's state lives in partition abs(Java hashCode(key)) %
// partitions of its coordinator key "group:topicId:partition"
// (share_state_records.h ShareCoordinatorKey), as Kafka's
// ShareCoordinatorService.partitionFor; For(key) gives that partition's
// coordinator or the error to answer (coordinator/base/coordinator_router.h).
#pragma once

#include "broker/coordinator/base/coordinator_router.h"
#include "broker/coordinator/share/share_coordinator.h"

namespace headrace::broker::share {

class ShareCoordinators final : public group::CoordinatorRouter<ShareCoordinator> {
 public:
  explicit ShareCoordinators(KafkaError elsewhere)
      : CoordinatorRouter(elsewhere, "hr-share-timer") {}
};

}  // namespace headrace::broker::share
