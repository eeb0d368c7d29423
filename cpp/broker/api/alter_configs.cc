// AlterConfigs (key 33), v0..2: replaces ALL of a resource's dynamic
// configs with the given set (keys left out revert to their defaults).
//   TOPIC (2)   the new overrides are validated as a whole (unknown key or
//               bad value: INVALID_CONFIG naming the key; null value or a
//               repeated key: INVALID_REQUEST), persisted, and applied to
//               the live partitions (TopicRegistry::AlterTopicConfig).
//               Unknown topic: UNKNOWN_TOPIC_OR_PARTITION.
//   BROKER (4)  dynamic broker configuration is not supported: an empty set
//               is accepted (there is nothing to remove), anything else is
//               INVALID_REQUEST naming the keys.
//   other       INVALID_REQUEST.
// A resource named twice in one request: INVALID_REQUEST for each.
// validate_only checks without changing anything.
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "broker/api/admin_util.h"
#include "broker/api/handler.h"
#include "broker/kafka_error.h"
#include "broker/topic_name.h"

namespace headrace::broker {
namespace {

using Req = protocol::AlterConfigsRequest;
using Resp = protocol::AlterConfigsResponse;

Status AlterTopic(BrokerContext& ctx, const Req::AlterConfigsResource& r, bool validate_only) {
  HR_RETURN_IF_ERROR(ValidateTopicName(r.resource_name));
  ConfigMap configs;
  for (const auto& c : r.configs) {
    if (!c.value) {
      return KafkaStatus(KafkaError::kInvalidRequest, "Null value not supported for : " + c.name);
    }
    if (!configs.emplace(c.name, *c.value).second) {
      return KafkaStatus(KafkaError::kInvalidRequest, "Duplicate config key: " + c.name);
    }
  }
  return ctx.topics().AlterTopicConfig(r.resource_name, configs, validate_only);
}

Status AlterBroker(BrokerContext& ctx, const Req::AlterConfigsResource& r) {
  std::vector<std::string> keys;
  for (const auto& c : r.configs) keys.push_back(c.name);
  return RejectDynamicBrokerConfig(r.resource_name, ctx.node_id, keys);
}

Status AlterOne(BrokerContext& ctx, const Req::AlterConfigsResource& r, bool validate_only) {
  if (r.resource_type == kResourceTopic) return AlterTopic(ctx, r, validate_only);
  if (r.resource_type == kResourceBroker) return AlterBroker(ctx, r);
  return UnsupportedResourceType(r.resource_type);
}

void HandleAlterConfigs(BrokerContext& ctx, Req& req, Request request) {
  const auto dups = DuplicateResources(req.resources);
  Resp resp;
  for (const auto& r : req.resources) {
    Status st = dups.count({r.resource_type, r.resource_name})
                    ? KafkaStatus(KafkaError::kInvalidRequest, "Duplicate resource in request.")
                    : AlterOne(ctx, r, req.validate_only);
    Resp::AlterConfigsResourceResponse out;
    out.error_code = Code(ToKafkaError(st));
    out.error_message = ErrorMessageOf(st);
    out.resource_type = r.resource_type;
    out.resource_name = r.resource_name;
    resp.responses.push_back(std::move(out));
  }
  request.Reply(resp);
}

}  // namespace

extern const ApiHandler kAlterConfigsHandler =
    MakeHandler<protocol::AlterConfigsRequest, HandleAlterConfigs>(0, 2);

}  // namespace headrace::broker
