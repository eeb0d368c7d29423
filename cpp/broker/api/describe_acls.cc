// DescribeAcls (key 29), v0..3: the ACL bindings matching one filter,
// grouped by resource pattern. Needs DESCRIBE on the CLUSTER;
// SECURITY_DISABLED without an authorizer; INVALID_REQUEST for a filter
// with UNKNOWN elements.
#include <map>
#include <tuple>

#include "broker/api/acl_api.h"

namespace headrace::broker {
namespace {

using Req = protocol::DescribeAclsRequest;
using Resp = protocol::DescribeAclsResponse;

void HandleDescribeAcls(BrokerContext& ctx, Req& req, Request request) {
  Resp resp;
  resp.error_message = std::nullopt;
  if (auto refusal = RefuseAclApi(ctx, request, AclOperation::kDescribe)) {
    resp.error_code = Code(refusal->error);
    resp.error_message = refusal->message;
    request.Reply(resp);
    return;
  }
  auth::AclBindingFilter filter =
      FilterFromWire(req.resource_type_filter, req.resource_name_filter, req.pattern_type_filter,
                     req.principal_filter, req.host_filter, req.operation, req.permission_type);
  if (Status st = auth::ValidateFilter(filter); !st.ok()) {
    resp.error_code = Code(KafkaError::kInvalidRequest);
    resp.error_message = st.message();
    request.Reply(resp);
    return;
  }
  // Bindings come sorted by (type, name, pattern, ...): one resource entry
  // per run.
  const auto snapshot = ctx.authorizer->snapshot();
  for (const auth::AclBinding& b : snapshot->bindings()) {
    if (!filter.Matches(b)) continue;
    const int8_t type = static_cast<int8_t>(b.resource_type);
    const int8_t pattern = static_cast<int8_t>(b.pattern_type);
    if (resp.resources.empty() || resp.resources.back().resource_type != type ||
        resp.resources.back().resource_name != b.resource_name ||
        resp.resources.back().pattern_type != pattern) {
      auto& r = resp.resources.emplace_back();
      r.resource_type = type;
      r.resource_name = b.resource_name;
      r.pattern_type = pattern;
    }
    auto& d = resp.resources.back().acls.emplace_back();
    d.principal = b.principal;
    d.host = b.host;
    d.operation = static_cast<int8_t>(b.operation);
    d.permission_type = static_cast<int8_t>(b.permission);
  }
  request.Reply(resp);
}

}  // namespace

extern const ApiHandler kDescribeAclsHandler = MakeHandler<Req, HandleDescribeAcls>(0, 3);

}  // namespace headrace::broker
