// DescribeClientQuotas (key 48), v0..1: the user / client-id entities with
// quotas that match a filter (docs/security.md "Quotas"). Components match
// an exact name (0), the default (1) or any named entity (2); strict also
// drops entities with a component the filter does not mention. Kafka's
// filter errors (INVALID_REQUEST) are the response's error_code.
#include "broker/api/authorize.h"
#include "broker/api/handler.h"
#include "broker/base/kafka_error.h"
#include "broker/security/quota/client_quota_store.h"

namespace headrace::broker {
namespace {

using Req = protocol::DescribeClientQuotasRequest;
using Resp = protocol::DescribeClientQuotasResponse;

void AddPart(const char* type, const quota::EntityPart& part, Resp::EntryData* out) {
  if (!part.present()) return;
  out->entity.push_back(
      {type, part.kind == quota::EntityPart::Kind::kDefault ? std::nullopt
                                                            : std::optional<std::string>(part.name)});
}

void HandleDescribeClientQuotas(BrokerContext& ctx, Req& req, Request request) {
  Resp resp;
  if (!AuthorizedOnCluster(ctx, request, AclOperation::kDescribeConfigs)) {  // as Kafka
    resp.error_code = Code(KafkaError::kClusterAuthorizationFailed);
    resp.error_message = "Cluster authorization failed.";
    resp.entries.reset();
    request.Reply(resp);
    return;
  }
  std::vector<quota::QuotaFilterPart> filter;
  for (const auto& c : req.components) filter.push_back({c.entity_type, c.match_type, c.match});
  quota::QuotaError err = quota::CheckFilter(filter);
  if (!err.ok() || ctx.client_quotas == nullptr) {
    resp.error_code = Code(err.ok() ? KafkaError::kUnknownServerError : err.code);
    resp.error_message = err.ok() ? "quotas not ready" : err.message;
    resp.entries.reset();
    request.Reply(resp);
    return;
  }
  resp.error_message.reset();
  for (const quota::QuotaEntry& e :
       quota::SelectEntries(*ctx.client_quotas->table(), filter, req.strict)) {
    Resp::EntryData& out = resp.entries->emplace_back();
    AddPart(quota::kUserType, e.entity.user, &out);
    AddPart(quota::kClientIdType, e.entity.client_id, &out);
    for (const auto& [key, value] : e.values) out.values.push_back({key, value});
  }
  request.Reply(resp);
}

}  // namespace

extern const ApiHandler kDescribeClientQuotasHandler =
    MakeHandler<Req, HandleDescribeClientQuotas>(0, 1);

}  // namespace headrace::broker
