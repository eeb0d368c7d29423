// The GROUP config resource (type 32) in DescribeConfigs, AlterConfigs and
// IncrementalAlterConfigs: a group id's configs (group_resource_config.h)
// kept in the broker's GroupConfigStore. The name must not be empty
// (INVALID_REQUEST); it need not name an existing group.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "broker/api/handler.h"
#include "broker/config/topic_config.h"

namespace headrace::broker {

// Every group-config key of `group` with its value and source.
// Errors: INVALID_REQUEST (empty name, or no store on this broker).
Result<std::vector<ConfigEntry>> DescribeGroupConfigs(const BrokerContext& ctx,
                                                      const std::string& group);

// Replaces the overrides of `group` with `next(current)` after Kafka's checks
// (INVALID_CONFIG; INVALID_REQUEST from `next`). Single node: persisted
// (group-configs.json) before the answer. Cluster mode: written to
// ZooKeeper's /config/groups/<group> by the control plane (blocks until
// ZooKeeper has it, REQUEST_TIMED_OUT after 30 s: call it off the event
// loop), kept here at once and applied by every broker from its next
// cluster state.
Status AlterGroupConfigs(const BrokerContext& ctx, const std::string& group,
                         const std::function<Result<ConfigMap>(const ConfigMap&)>& next,
                         bool validate_only);

// DeleteGroups: removes the configs of a deleted group (as Kafka does).
// Errors as AlterGroupConfigs (the group is deleted regardless).
Status RemoveGroupConfigs(const BrokerContext& ctx, const std::string& group);

}  // namespace headrace::broker
