// DeleteAcls (key 31), v0..3: removes the bindings each filter matches and
// lists them per filter. Needs ALTER on the CLUSTER; SECURITY_DISABLED
// without an authorizer; INVALID_REQUEST for a filter with UNKNOWN
// elements. Single node: one durable write of the ACL file; cluster: the
// matched bindings (from this broker's current ACLs, as Kafka's ZooKeeper
// authorizer used its cache) are removed from ZooKeeper by the control plane.
#include <set>

#include "broker/api/acl_api.h"
#include "broker/security/auth/acl_store.h"
#include "common/logging.h"

namespace headrace::broker {
namespace {

using Req = protocol::DeleteAclsRequest;
using Resp = protocol::DeleteAclsResponse;

Resp::DeleteAclsMatchingAcl Matching(const auth::AclBinding& b) {
  Resp::DeleteAclsMatchingAcl m;
  m.error_message = std::nullopt;
  m.resource_type = static_cast<int8_t>(b.resource_type);
  m.resource_name = b.resource_name;
  m.pattern_type = static_cast<int8_t>(b.pattern_type);
  m.principal = b.principal;
  m.host = b.host;
  m.operation = static_cast<int8_t>(b.operation);
  m.permission_type = static_cast<int8_t>(b.permission);
  return m;
}

void HandleDeleteAcls(BrokerContext& ctx, Req& req, Request request) {
  auto resp = std::make_shared<Resp>();
  resp->filter_results.resize(req.filters.size());
  for (auto& r : resp->filter_results) r.error_message = std::nullopt;
  if (auto refusal = RefuseAclApi(ctx, request, AclOperation::kAlter)) {
    for (auto& r : resp->filter_results) {
      r.error_code = Code(refusal->error);
      r.error_message = refusal->message;
    }
    request.Reply(*resp);
    return;
  }
  std::vector<auth::AclBindingFilter> valid;
  std::vector<size_t> valid_index;
  for (size_t i = 0; i < req.filters.size(); ++i) {
    const auto& f = req.filters[i];
    auth::AclBindingFilter filter =
        FilterFromWire(f.resource_type_filter, f.resource_name_filter, f.pattern_type_filter,
                       f.principal_filter, f.host_filter, f.operation, f.permission_type);
    if (Status st = auth::ValidateFilter(filter); !st.ok()) {
      resp->filter_results[i].error_code = Code(KafkaError::kInvalidRequest);
      resp->filter_results[i].error_message = st.message();
      continue;
    }
    valid.push_back(std::move(filter));
    valid_index.push_back(i);
  }
  if (valid.empty()) {
    request.Reply(*resp);
    return;
  }
  if (ctx.acl_store != nullptr) {
    auto removed = ctx.acl_store->Delete(valid);
    for (size_t k = 0; k < valid.size(); ++k) {
      auto& r = resp->filter_results[valid_index[k]];
      if (!removed.ok()) {
        r.error_code = Code(KafkaError::kUnknownServerError);
        r.error_message = removed.status().message();
        continue;
      }
      for (const auth::AclBinding& b : (*removed)[k]) {
        HR_LOG(kInfo) << "ACL deleted: " << auth::DescribeBinding(b);
        r.matching_acls.push_back(Matching(b));
      }
    }
    request.Reply(*resp);
    return;
  }
  // Cluster mode.
  std::set<auth::AclBinding> doomed;
  const auto snapshot = ctx.authorizer->snapshot();
  for (size_t k = 0; k < valid.size(); ++k) {
    for (const auth::AclBinding& b : snapshot->bindings()) {
      if (!valid[k].Matches(b)) continue;
      resp->filter_results[valid_index[k]].matching_acls.push_back(Matching(b));
      doomed.insert(b);
    }
  }
  if (doomed.empty()) {
    request.Reply(*resp);
    return;
  }
  std::vector<auth::AclBinding> removed(doomed.begin(), doomed.end());
  auth::Authorizer* authorizer = ctx.authorizer;
  SubmitAclChange(ctx, request, "delete_acls", removed,
                  [resp, valid_index, request, authorizer, removed](KafkaError e,
                                                                    const std::string& message) {
                    if (e == KafkaError::kNone) authorizer->Update({}, removed);
                    if (e != KafkaError::kNone) {
                      for (size_t i : valid_index) {
                        for (auto& m : resp->filter_results[i].matching_acls) {
                          m.error_code = Code(e);
                          m.error_message = message;
                        }
                      }
                    }
                    request.Reply(*resp);
                  });
}

}  // namespace

// On the admin worker: the single-node store fsyncs.
extern const ApiHandler kDeleteAclsHandler =
    MakeHandler<Req, OnAdminWorker<Req, HandleDeleteAcls>>(0, 3);

}  // namespace headrace::broker
