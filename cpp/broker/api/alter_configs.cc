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

void HandleAlterConfigs(BrokerContext& ctx, Req& req, Request request) {
  ReplyAlterConfigs<Resp>(ctx, req, request, [&](const Req::AlterConfigsResource& r) {
    return AlterTopic(ctx, r, req.validate_only);
  });
}

}  // namespace

extern const ApiHandler kAlterConfigsHandler =
    MakeHandler<protocol::AlterConfigsRequest, HandleAlterConfigs>(0, 2);

}  // namespace headrace::broker
