// Small helpers shared by the admin handlers (CreateTopics, DeleteTopics,
// CreatePartitions, DescribeConfigs, AlterConfigs, IncrementalAlterConfigs):
// config resource types, the BROKER resource name check, duplicate detection
// and the error message a response carries.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "broker/api/authorize.h"
#include "broker/api/handler.h"
#include "broker/base/kafka_error.h"
#include "headrace/status.h"

namespace headrace::broker {

// ConfigResource types, numbered as on the wire.
inline constexpr int8_t kResourceTopic = 2;
inline constexpr int8_t kResourceBroker = 4;
inline constexpr int8_t kResourceGroup = 32;  // Kafka 4.x group configs (KIP-848/KIP-932)

// The ErrorMessage field for `s`: null when OK (Kafka's convention).
inline std::optional<std::string> ErrorMessageOf(const Status& s) {
  if (s.ok()) return std::nullopt;
  return s.message();
}

// The names that occur more than once in `names`.
inline std::set<std::string> DuplicateNames(const std::vector<std::string>& names) {
  std::set<std::string> seen, dups;
  for (const auto& n : names) {
    if (!seen.insert(n).second) dups.insert(n);
  }
  return dups;
}

// A BROKER config resource must name this broker ("" = this broker too, as
// there is no cluster-wide dynamic default). Errors: INVALID_REQUEST.
inline Status CheckBrokerResourceName(const std::string& name, int32_t node_id) {
  if (name.empty()) return Status::OK();
  int32_t id = -1;
  auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), id);
  if (ec != std::errc() || p != name.data() + name.size()) {
    return KafkaStatus(KafkaError::kInvalidRequest,
                       "Broker id must be an integer, but it is: " + name);
  }
  if (id != node_id) {
    return KafkaStatus(KafkaError::kInvalidRequest,
                       "Unexpected broker id, expected " + std::to_string(node_id) +
                           " or empty string, but received " + name);
  }
  return Status::OK();
}

inline Status UnsupportedResourceType(int8_t type) {
  return KafkaStatus(KafkaError::kInvalidRequest,
                     "Unsupported resource type: " + std::to_string(type) +
                         " (supported: TOPIC=2, BROKER=4, GROUP=32)");
}

// The (resource_type, resource_name) pairs named more than once in
// `resources` (any of the *AlterConfigs resource structs).
template <typename Resources>
std::set<std::pair<int8_t, std::string>> DuplicateResources(const Resources& resources) {
  std::set<std::pair<int8_t, std::string>> seen, dups;
  for (const auto& r : resources) {
    if (!seen.emplace(r.resource_type, r.resource_name).second) {
      dups.emplace(r.resource_type, r.resource_name);
    }
  }
  return dups;
}

// ACLs for DescribeConfigs (`op` DESCRIBE_CONFIGS) and the AlterConfigs
// APIs (ALTER_CONFIGS): on the topic for TOPIC resources
// (TOPIC_AUTHORIZATION_FAILED), on the CLUSTER for BROKER ones
// (CLUSTER_AUTHORIZATION_FAILED), on the group for GROUP ones
// (GROUP_AUTHORIZATION_FAILED). OK for other types (refused later).
inline Status RequireConfigAccess(const BrokerContext& ctx, const Request& req, AclOperation op,
                                  int8_t resource_type, const std::string& resource_name) {
  if (resource_type == kResourceTopic) return RequireOnTopic(ctx, req, op, resource_name);
  if (resource_type == kResourceBroker && !AuthorizedOnCluster(ctx, req, op))
    return KafkaStatus(KafkaError::kClusterAuthorizationFailed, "Cluster authorization failed.");
  if (resource_type == kResourceGroup && !AuthorizedOnGroup(ctx, req, op, resource_name))
    return KafkaStatus(KafkaError::kGroupAuthorizationFailed, "Group authorization failed.");
  return Status::OK();
}

// Answers AlterConfigs or IncrementalAlterConfigs (same response shape): one
// result per resource; a resource named twice is INVALID_REQUEST; without
// ALTER_CONFIGS (RequireConfigAccess) the resource is refused; TOPIC
// resources go to `alter_topic(resource)`, BROKER resources (name "" or
// this node's id, checked here) to `alter_broker(resource)`, GROUP
// resources to `alter_group(resource)`, other types are INVALID_REQUEST.
template <typename Resp, typename Req, typename AlterTopicFn, typename AlterBrokerFn,
          typename AlterGroupFn>
void ReplyAlterConfigs(const BrokerContext& ctx, const Req& req, const Request& request,
                       AlterTopicFn alter_topic, AlterBrokerFn alter_broker,
                       AlterGroupFn alter_group) {
  const auto dups = DuplicateResources(req.resources);
  Resp resp;
  for (const auto& r : req.resources) {
    Status st;
    if (dups.count({r.resource_type, r.resource_name})) {
      st = KafkaStatus(KafkaError::kInvalidRequest, "Duplicate resource in request.");
    } else if (st = RequireConfigAccess(ctx, request, AclOperation::kAlterConfigs, r.resource_type,
                                        r.resource_name);
               !st.ok()) {
      // refused by the ACLs
    } else if (r.resource_type == kResourceTopic) {
      st = alter_topic(r);
    } else if (r.resource_type == kResourceBroker) {
      st = CheckBrokerResourceName(r.resource_name, ctx.node_id);
      if (st.ok()) st = alter_broker(r);
    } else if (r.resource_type == kResourceGroup) {
      st = alter_group(r);
    } else {
      st = UnsupportedResourceType(r.resource_type);
    }
    auto& out = resp.responses.emplace_back();
    out.error_code = Code(ToKafkaError(st));
    out.error_message = ErrorMessageOf(st);
    out.resource_type = r.resource_type;
    out.resource_name = r.resource_name;
  }
  request.Reply(resp);
}

}  // namespace headrace::broker
