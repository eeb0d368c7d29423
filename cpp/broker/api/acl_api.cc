#include "broker/api/acl_api.h"

#include "broker/api/cluster_admin.h"
#include "broker/api/cluster_lookup.h"
#include "broker/base/json.h"

namespace headrace::broker {

std::optional<AclApiRefusal> RefuseAclApi(const BrokerContext& ctx, const Request& req,
                                          AclOperation op) {
  if (ctx.authorizer == nullptr || !ctx.authorizer->enabled())
    return AclApiRefusal{KafkaError::kSecurityDisabled, "No Authorizer is configured."};
  if (!AuthorizedOnCluster(ctx, req, op))
    return AclApiRefusal{KafkaError::kClusterAuthorizationFailed,
                         std::string("Cluster authorization failed: ") + auth::OperationName(op) +
                             " on the CLUSTER is required."};
  return std::nullopt;
}

auth::AclBindingFilter FilterFromWire(int8_t resource_type,
                                      const std::optional<std::string>& resource_name,
                                      int8_t pattern_type,
                                      const std::optional<std::string>& principal,
                                      const std::optional<std::string>& host, int8_t operation,
                                      int8_t permission) {
  auth::AclBindingFilter f;
  f.resource_type = auth::ResourceTypeFromWire(resource_type);
  f.resource_name = resource_name;
  f.pattern_type = auth::PatternTypeFromWire(pattern_type);
  f.principal = principal;
  f.host = host;
  f.operation = auth::OperationFromWire(operation);
  f.permission = auth::PermissionFromWire(permission);
  return f;
}

void SubmitAclChange(BrokerContext& ctx, const Request& req, const char* kind,
                     const std::vector<auth::AclBinding>& bindings,
                     std::function<void(KafkaError, std::string)> done) {
  std::string payload =
      json::Write(json::Value(json::Object{{"acls", auth::BindingsToJson(bindings)}}));
  SubmitControlRequest(ctx, req, kind, std::move(payload), 0,
                       [done = std::move(done)](bool ok, const std::string& result) {
                         Status st = ControlPlaneAnswer(ok, result);
                         done(ToKafkaError(st), st.ok() ? "" : st.message());
                       });
}

}  // namespace headrace::broker
