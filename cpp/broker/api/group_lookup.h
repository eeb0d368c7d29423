// How a group API finds the coordinator of a group: the broker's router
// (coordinator/group/group_coordinators.h) or, in a bare test context without one,
// COORDINATOR_NOT_AVAILABLE.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "broker/api/authorize.h"
#include "broker/api/handler.h"
#include "broker/base/kafka_error.h"
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

// The per-group frame of the describe APIs (DescribeGroups,
// ConsumerGroupDescribe, ShareGroupDescribe): one entry per id, in request
// order, carrying the id and GROUP_AUTHORIZATION_FAILED without DESCRIBE on
// the group, the lookup's error (NOT_COORDINATOR: this group only) when
// this broker does not coordinate it, else what fill(entry, coordinator)
// writes.
template <typename Entry, typename Fill>
void DescribeEachGroup(const BrokerContext& ctx, const Request& request,
                       const std::vector<std::string>& ids, std::vector<Entry>& out,
                       Fill&& fill) {
  for (const std::string& id : ids) {
    Entry e;
    e.group_id = id;
    if (!AuthorizedOnGroup(ctx, request, AclOperation::kDescribe, id)) {
      e.error_code = Code(KafkaError::kGroupAuthorizationFailed);
    } else if (group::CoordinatorLookup found = GroupCoordinatorFor(ctx, id);
               found.coordinator == nullptr) {
      e.error_code = Code(found.error);
    } else {
      fill(e, *found.coordinator);
    }
    out.push_back(std::move(e));
  }
}

// Cluster mode: asks the control plane to create __consumer_offsets
// (offsets.topic.num.partitions partitions, offsets.topic.replication.factor
// replicas, compacted) unless it exists; what the first FindCoordinator for
// a group does. Nothing on a single node. find_coordinator.cc.
void EnsureConsumerOffsetsTopic(BrokerContext& ctx);

}  // namespace headrace::broker
