// What CreateAcls, DescribeAcls and DeleteAcls share: the wire <-> AclBinding
// conversions, their common refusals (SECURITY_DISABLED without an
// authorizer, CLUSTER_AUTHORIZATION_FAILED without the cluster operation),
// and the cluster-mode path (ACL changes go to the control plane, which
// writes them to ZooKeeper; docs/security.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "broker/api/authorize.h"
#include "broker/security/auth/acl.h"
#include "broker/base/kafka_error.h"

namespace headrace::broker {

// Why the request is refused as a whole (nullopt: go on): no authorizer
// (SECURITY_DISABLED) or no `op` on the CLUSTER (CLUSTER_AUTHORIZATION_FAILED).
struct AclApiRefusal {
  KafkaError error;
  std::string message;
};
std::optional<AclApiRefusal> RefuseAclApi(const BrokerContext& ctx, const Request& req,
                                          AclOperation op);

// A DescribeAcls / DeleteAcls filter from its wire fields.
auth::AclBindingFilter FilterFromWire(int8_t resource_type,
                                      const std::optional<std::string>& resource_name,
                                      int8_t pattern_type,
                                      const std::optional<std::string>& principal,
                                      const std::optional<std::string>& host, int8_t operation,
                                      int8_t permission);

// Cluster mode: asks the control plane to add (kind "create_acls") or
// remove ("delete_acls") exactly `bindings` in ZooKeeper, then calls
// `done(error, message)` on the request's loop (NONE when written).
void SubmitAclChange(BrokerContext& ctx, const Request& req, const char* kind,
                     const std::vector<auth::AclBinding>& bindings,
                     std::function<void(KafkaError, std::string)> done);

}  // namespace headrace::broker
