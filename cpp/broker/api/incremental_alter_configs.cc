// IncrementalAlterConfigs (key 44), v0..1 (KIP-339): changes single keys of
// a resource's dynamic configs. Operations: SET (0) replaces a value,
// DELETE (1) reverts a key to its default, APPEND (2) / SUBTRACT (3) add or
// remove items of a list key (cleanup.policy only).
//   TOPIC (2)   unknown key or bad value: INVALID_CONFIG; unknown operation,
//               APPEND/SUBTRACT on a non-list key, null value where one is
//               needed, or a key named twice: INVALID_REQUEST. The result is
//               persisted and applied to the live partitions.
//               Unknown topic: UNKNOWN_TOPIC_OR_PARTITION.
//   BROKER (4)  dynamic broker configs (dynamic_broker_config.h): name
//               "<node id>" changes this broker's dynamic values, "" the
//               cluster-wide default's. SET, DELETE, and APPEND/SUBTRACT on
//               list keys (log.cleanup.policy); unknown or read-only keys,
//               bad values: INVALID_REQUEST.
//   GROUP (32)  group configs (group_config_entries.h): SET and DELETE;
//               unknown key, bad or out-of-range value: INVALID_CONFIG;
//               APPEND/SUBTRACT (no list keys): INVALID_CONFIG. The group
//               need not exist.
//   other       INVALID_REQUEST.
// A resource named twice in one request: INVALID_REQUEST for each.
// validate_only checks without changing anything.
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "broker/api/admin_util.h"
#include "broker/api/cluster_admin.h"
#include "broker/config/broker_config.h"
#include "broker/api/broker_config_entries.h"
#include "broker/api/group_config_entries.h"
#include "broker/api/handler.h"
#include "broker/base/kafka_error.h"
#include "broker/partition/topic_name.h"

namespace headrace::broker {
namespace {

using Req = protocol::IncrementalAlterConfigsRequest;
using Resp = protocol::IncrementalAlterConfigsResponse;

// The resource's operations. Errors: INVALID_REQUEST for an unknown
// operation or a repeated key.
Result<std::vector<ConfigAlteration>> OpsOf(const Req::AlterConfigsResource& r) {
  std::vector<ConfigAlteration> ops;
  std::set<std::string> keys;
  for (const auto& c : r.configs) {
    if (c.config_operation < 0 || c.config_operation > 3) {
      return KafkaStatus(KafkaError::kInvalidRequest,
                         "Unknown config operation " + std::to_string(c.config_operation) +
                             " for " + c.name + " (SET=0, DELETE=1, APPEND=2, SUBTRACT=3)");
    }
    if (!keys.insert(c.name).second) {
      return KafkaStatus(KafkaError::kInvalidRequest,
                         "Error due to duplicate config keys: " + c.name);
    }
    ConfigAlteration op;
    op.key = c.name;
    op.op = static_cast<AlterConfigOp>(c.config_operation);
    op.value = c.value;
    ops.push_back(std::move(op));
  }
  return ops;
}

Status AlterTopic(BrokerContext& ctx, const Req::AlterConfigsResource& r, bool validate_only) {
  HR_RETURN_IF_ERROR(ValidateTopicName(r.resource_name));
  HR_ASSIGN_OR_RETURN(std::vector<ConfigAlteration> ops, OpsOf(r));
  if (ctx.state->cluster() != nullptr) {  // stored in ZooKeeper, applied from there
    return ClusterAlterTopicConfig(
        ctx, r.resource_name,
        [&](const ConfigMap& current) {
          return ApplyConfigAlterations(*ctx.topics().defaults(), current, ops);
        },
        validate_only);
  }
  return ctx.topics().IncrementalAlterTopicConfig(r.resource_name, ops, validate_only);
}

// APPEND/SUBTRACT on a list-valued broker key (a topic default such as
// log.cleanup.policy), starting from this layer's value, else the
// effective default. Errors: INVALID_REQUEST.
Result<std::string> AlterBrokerList(BrokerContext& ctx, const ConfigMap& layer,
                                    const ConfigAlteration& op) {
  const BrokerKeyInfo* info = FindBrokerKey(op.key);
  if (info == nullptr || info->type != ConfigType::kList || info->topic_key.empty()) {
    return KafkaStatus(KafkaError::kInvalidRequest,
                       op.key + ": APPEND and SUBTRACT are only allowed on list configs");
  }
  std::shared_ptr<const TopicDefaults> defaults = ctx.topics().defaults();
  auto it = layer.find(op.key);
  const std::string base =
      it != layer.end() ? it->second : FormatTopicConfig(defaults->settings, info->topic_key);
  auto altered = ApplyConfigAlterations(*defaults, {{info->topic_key, base}},
                                        {{info->topic_key, op.op, op.value}});
  if (!altered.ok()) {
    return KafkaStatus(KafkaError::kInvalidRequest, op.key + ": " + altered.status().message());
  }
  return altered->at(info->topic_key);
}

Status AlterBroker(BrokerContext& ctx, const Req::AlterConfigsResource& r, bool validate_only) {
  HR_ASSIGN_OR_RETURN(std::vector<ConfigAlteration> ops, OpsOf(r));
  DynamicBrokerLayers layers = ctx.state->dynamic_config().layers();
  ConfigMap next = r.resource_name.empty() ? layers.cluster_default : layers.per_broker;
  for (const ConfigAlteration& op : ops) {
    if (op.op == AlterConfigOp::kDelete) {
      next.erase(op.key);
    } else if (!op.value) {
      return KafkaStatus(KafkaError::kInvalidRequest, op.key + ": a value is required");
    } else if (op.op == AlterConfigOp::kSet) {
      next[op.key] = *op.value;
    } else {
      HR_ASSIGN_OR_RETURN(next[op.key], AlterBrokerList(ctx, next, op));
    }
  }
  return ReplaceBrokerLayer(ctx, r.resource_name, next, validate_only);
}

Status AlterGroup(BrokerContext& ctx, const Req::AlterConfigsResource& r, bool validate_only) {
  HR_ASSIGN_OR_RETURN(std::vector<ConfigAlteration> ops, OpsOf(r));
  return AlterGroupConfigs(
      ctx, r.resource_name,
      [&](const ConfigMap& current) -> Result<ConfigMap> {
        ConfigMap next = current;
        for (const ConfigAlteration& op : ops) {
          if (op.op == AlterConfigOp::kDelete) {
            next.erase(op.key);
          } else if (op.op != AlterConfigOp::kSet) {
            return KafkaStatus(KafkaError::kInvalidConfig,
                               op.key + ": APPEND and SUBTRACT are only allowed on list configs");
          } else if (!op.value) {
            return KafkaStatus(KafkaError::kInvalidRequest, op.key + ": a value is required");
          } else {
            next[op.key] = *op.value;
          }
        }
        return next;
      },
      validate_only);
}

void HandleIncrementalAlterConfigs(BrokerContext& ctx, Req& req, Request request) {
  ReplyAlterConfigs<Resp>(
      ctx, req, request,
      [&](const Req::AlterConfigsResource& r) { return AlterTopic(ctx, r, req.validate_only); },
      [&](const Req::AlterConfigsResource& r) { return AlterBroker(ctx, r, req.validate_only); },
      [&](const Req::AlterConfigsResource& r) { return AlterGroup(ctx, r, req.validate_only); });
}

}  // namespace

extern const ApiHandler kIncrementalAlterConfigsHandler =
    MakeHandler<protocol::IncrementalAlterConfigsRequest,
                OnAdminWorker<protocol::IncrementalAlterConfigsRequest,
                              HandleIncrementalAlterConfigs>>(0, 1);

}  // namespace headrace::broker
