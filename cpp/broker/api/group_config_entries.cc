#include "broker/api/group_config_entries.h"

#include "broker/api/cluster_admin.h"
#include "broker/base/json.h"
#include "broker/base/kafka_error.h"
#include "broker/coordinator/group/group_config.h"
#include "broker/coordinator/group/group_config_store.h"
#include "broker/coordinator/group/group_resource_config.h"

namespace headrace::broker {
namespace {

Status CheckGroupResource(const BrokerContext& ctx, const std::string& group) {
  if (group.empty()) {
    return KafkaStatus(KafkaError::kInvalidRequest, "Group name must not be empty.");
  }
  if (ctx.group_configs == nullptr || ctx.group_config == nullptr) {
    return KafkaStatus(KafkaError::kInvalidRequest, "Group configs are not kept by this broker.");
  }
  if (ctx.state->cluster() != nullptr &&
      (group.find('/') != std::string::npos || group == "." || group == "..")) {
    // ZooKeeper's /config/groups/<group> cannot name it.
    return KafkaStatus(KafkaError::kInvalidRequest,
                       "Group configs of a group id with '/' (or '.', '..') are not supported "
                       "in cluster mode: " + group);
  }
  return Status::OK();
}

}  // namespace

Result<std::vector<ConfigEntry>> DescribeGroupConfigs(const BrokerContext& ctx,
                                                      const std::string& group) {
  HR_RETURN_IF_ERROR(CheckGroupResource(ctx, group));
  return group::DescribeGroupResourceConfigs(ctx.group_configs->Get(group), *ctx.group_config,
                                             ctx.config().start_properties);
}

Status AlterGroupConfigs(const BrokerContext& ctx, const std::string& group,
                         const std::function<Result<ConfigMap>(const ConfigMap&)>& next,
                         bool validate_only) {
  HR_RETURN_IF_ERROR(CheckGroupResource(ctx, group));
  HR_ASSIGN_OR_RETURN(ConfigMap overrides, next(ctx.group_configs->Get(group)));
  HR_RETURN_IF_ERROR(group::CheckGroupResourceConfigs(overrides, *ctx.group_config));
  if (validate_only) return Status::OK();
  if (ctx.state->cluster() != nullptr) {
    json::Object values;
    for (const auto& [k, v] : overrides) values[k] = json::Value(v);
    HR_RETURN_IF_ERROR(CallControlPlane(
        ctx, "alter_group_configs",
        json::Object{{"group", group}, {"configs", json::Value(std::move(values))}}));
  }
  // Cluster mode: this broker's copy until its next cluster state brings
  // the same from ZooKeeper (read-your-writes on the broker that answered).
  return ctx.group_configs->Replace(group, overrides);
}

Status RemoveGroupConfigs(const BrokerContext& ctx, const std::string& group) {
  if (ctx.group_configs == nullptr || ctx.group_configs->Get(group).empty()) return Status::OK();
  return AlterGroupConfigs(
      ctx, group, [](const ConfigMap&) -> Result<ConfigMap> { return ConfigMap{}; }, false);
}

}  // namespace headrace::broker
