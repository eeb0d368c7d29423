// CreateAcls (key 30), v0..3: adds ACL bindings (docs/security.md). Needs
// ALTER on the CLUSTER; SECURITY_DISABLED without an authorizer; a binding
// Kafka would refuse gets INVALID_REQUEST, the others are stored in one
// durable write (single node: the ACL file; cluster: ZooKeeper through the
// control plane).
#include "broker/api/acl_api.h"
#include "broker/security/auth/acl_store.h"
#include "common/logging.h"

namespace headrace::broker {
namespace {

using Req = protocol::CreateAclsRequest;
using Resp = protocol::CreateAclsResponse;

void HandleCreateAcls(BrokerContext& ctx, Req& req, Request request) {
  auto resp = std::make_shared<Resp>();
  resp->results.resize(req.creations.size());
  for (auto& r : resp->results) r.error_message = std::nullopt;
  if (auto refusal = RefuseAclApi(ctx, request, AclOperation::kAlter)) {
    for (auto& r : resp->results) {
      r.error_code = Code(refusal->error);
      r.error_message = refusal->message;
    }
    request.Reply(*resp);
    return;
  }
  std::vector<auth::AclBinding> valid;
  std::vector<size_t> valid_index;
  for (size_t i = 0; i < req.creations.size(); ++i) {
    const auto& c = req.creations[i];
    auth::AclBinding b{auth::ResourceTypeFromWire(c.resource_type), c.resource_name,
                       auth::PatternTypeFromWire(c.resource_pattern_type), c.principal, c.host,
                       auth::OperationFromWire(c.operation), auth::PermissionFromWire(c.permission_type)};
    if (Status st = auth::ValidateBinding(b); !st.ok()) {
      resp->results[i].error_code = Code(KafkaError::kInvalidRequest);
      resp->results[i].error_message = st.message();
      continue;
    }
    valid.push_back(std::move(b));
    valid_index.push_back(i);
  }
  auto finish = [resp, valid_index, request](KafkaError e, const std::string& message) {
    for (size_t i : valid_index) {
      resp->results[i].error_code = Code(e);
      if (e != KafkaError::kNone) resp->results[i].error_message = message;
    }
    request.Reply(*resp);
  };
  if (valid.empty()) {
    request.Reply(*resp);
    return;
  }
  if (ctx.acl_store == nullptr) {  // cluster mode: ZooKeeper through the control plane
    auth::Authorizer* authorizer = ctx.authorizer;
    SubmitAclChange(ctx, request, "create_acls", valid,
                    [finish, authorizer, valid](KafkaError e, const std::string& message) {
                      if (e == KafkaError::kNone) authorizer->Update(valid, {});
                      finish(e, message);
                    });
    return;
  }
  Status st = ctx.acl_store->Create(valid);
  if (!st.ok()) {
    HR_LOG(kWarn) << "CreateAcls: " << st.ToString();
  } else {
    for (const auth::AclBinding& b : valid) HR_LOG(kInfo) << "ACL created: " << auth::DescribeBinding(b);
  }
  finish(st.ok() ? KafkaError::kNone : KafkaError::kUnknownServerError, st.message());
}

}  // namespace

// On the admin worker: the single-node store fsyncs.
extern const ApiHandler kCreateAclsHandler =
    MakeHandler<Req, OnAdminWorker<Req, HandleCreateAcls>>(0, 3);

}  // namespace headrace::broker
