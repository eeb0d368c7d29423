// The handlers' one door to the authorizer: "may this request's principal,
// from its client's IP, do `op` on this resource?" (docs/security.md lists
// which operation each API checks, as Kafka's KafkaApis). One call per
// resource; without an authorizer every call is true after one branch.
#pragma once

#include <initializer_list>
#include <string_view>

#include "broker/api/handler.h"
#include "broker/security/auth/authorizer.h"
#include "broker/base/kafka_error.h"

namespace headrace::broker {

using auth::AclOperation;
using auth::ResourceType;

// The client's IP from "host:port" / "[v6]:port" (the ACL host).
inline std::string_view ClientIp(std::string_view peer) {
  const size_t colon = peer.rfind(':');
  std::string_view host = colon == std::string_view::npos ? peer : peer.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  return host;
}

// Whether requests are authorised at all (authorizer.class.name set).
inline bool AuthorizerEnabled(const BrokerContext& ctx) {
  return ctx.authorizer != nullptr && ctx.authorizer->enabled();
}

inline bool Authorized(const BrokerContext& ctx, const Request& req, AclOperation op,
                       ResourceType type, std::string_view name) {
  if (ctx.authorizer == nullptr || !ctx.authorizer->enabled()) return true;
  return ctx.authorizer->Authorize(req.session().principal, ClientIp(req.connection().peer), op,
                                   type, name);
}

inline bool AuthorizedOnCluster(const BrokerContext& ctx, const Request& req, AclOperation op) {
  return Authorized(ctx, req, op, ResourceType::kCluster, auth::kClusterName);
}

inline bool AuthorizedOnTopic(const BrokerContext& ctx, const Request& req, AclOperation op,
                              std::string_view topic) {
  return Authorized(ctx, req, op, ResourceType::kTopic, topic);
}

inline bool AuthorizedOnGroup(const BrokerContext& ctx, const Request& req, AclOperation op,
                              std::string_view group) {
  return Authorized(ctx, req, op, ResourceType::kGroup, group);
}

inline bool AuthorizedOnTxnId(const BrokerContext& ctx, const Request& req, AclOperation op,
                              std::string_view transactional_id) {
  return Authorized(ctx, req, op, ResourceType::kTransactionalId, transactional_id);
}

// Kafka's authorizeByResourceType: `op` on at least one resource of `type`.
inline bool AuthorizedOnAny(const BrokerContext& ctx, const Request& req, AclOperation op,
                            ResourceType type) {
  if (ctx.authorizer == nullptr || !ctx.authorizer->enabled()) return true;
  return ctx.authorizer->AuthorizeAny(req.session().principal, ClientIp(req.connection().peer), op,
                                      type);
}

// The Metadata / DescribeCluster / DescribeGroups "authorized operations"
// bit set: bit `op` for each of `ops` the request may do on the resource.
inline int32_t AuthorizedOperations(const BrokerContext& ctx, const Request& req,
                                    ResourceType type, std::string_view name,
                                    std::initializer_list<AclOperation> ops) {
  int32_t bits = 0;
  for (AclOperation op : ops) {
    if (Authorized(ctx, req, op, type, name)) bits |= int32_t{1} << static_cast<int>(op);
  }
  return bits;
}

// What the request may do on the CLUSTER (Metadata, DescribeCluster):
// CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS,
// IDEMPOTENT_WRITE.
inline int32_t ClusterAuthorizedOperations(const BrokerContext& ctx, const Request& req) {
  return AuthorizedOperations(
      ctx, req, ResourceType::kCluster, auth::kClusterName,
      {AclOperation::kCreate, AclOperation::kAlter, AclOperation::kDescribe,
       AclOperation::kClusterAction, AclOperation::kDescribeConfigs, AclOperation::kAlterConfigs,
       AclOperation::kIdempotentWrite});
}

// Whether the request may have `topic` created automatically (Metadata,
// Produce): CREATE on the CLUSTER or on the topic.
inline bool MayAutoCreate(const BrokerContext& ctx, const Request& req, std::string_view topic) {
  return AuthorizedOnCluster(ctx, req, AclOperation::kCreate) ||
         AuthorizedOnTopic(ctx, req, AclOperation::kCreate, topic);
}

// OK, or TOPIC_AUTHORIZATION_FAILED without `op` on the topic (as a Status,
// for handlers that chain Status checks).
inline Status RequireOnTopic(const BrokerContext& ctx, const Request& req, AclOperation op,
                             std::string_view topic) {
  if (AuthorizedOnTopic(ctx, req, op, topic)) return Status::OK();
  return KafkaStatus(KafkaError::kTopicAuthorizationFailed, "Authorization failed.");
}

// CreateTopics: OK, or TOPIC_AUTHORIZATION_FAILED without CREATE on the
// CLUSTER or on the topic.
inline Status MayCreateTopic(const BrokerContext& ctx, const Request& req, std::string_view topic) {
  if (MayAutoCreate(ctx, req, topic)) return Status::OK();
  return KafkaStatus(KafkaError::kTopicAuthorizationFailed, "Authorization failed.");
}

}  // namespace headrace::broker
