// DescribeConfigs (key 32), v1..4. Resources:
//   TOPIC (2)   every supported topic key with its effective value and
//               source (DYNAMIC_TOPIC_CONFIG=1 for an override,
//               STATIC_BROKER_CONFIG=4 when the broker property was set,
//               DEFAULT_CONFIG=5 otherwise). Invalid name:
//               INVALID_TOPIC_EXCEPTION; unknown: UNKNOWN_TOPIC_OR_PARTITION.
//   BROKER (4)  this broker's settings (broker_config_entries.h) for this
//               node's id; for the name "" (the cluster-wide default) only
//               the keys the dynamic default sets, as Kafka answers; another
//               id: INVALID_REQUEST.
//   GROUP (32)  every group config of the group id (group_config_entries.h):
//               DYNAMIC_GROUP_CONFIG=8 for the ones it sets, else the
//               broker's group.* value (STATIC_BROKER_CONFIG / DEFAULT_CONFIG);
//               the group need not exist. Empty name: INVALID_REQUEST.
//   other       INVALID_REQUEST.
// configuration_keys null or empty = all keys; otherwise only the named
// ones (unknown names are left out). Synonyms only with include_synonyms;
// config_type (v3+) always; documentation (v3+) only with
// include_documentation, null otherwise.
#include <algorithm>
#include <string>
#include <vector>

#include "broker/api/admin_util.h"
#include "broker/api/broker_config_entries.h"
#include "broker/api/group_config_entries.h"
#include "broker/api/authorize.h"
#include "broker/api/handler.h"
#include "broker/cluster/cluster_view.h"
#include "broker/base/kafka_error.h"
#include "broker/partition/topic_name.h"

namespace headrace::broker {
namespace {

using Req = protocol::DescribeConfigsRequest;
using Resp = protocol::DescribeConfigsResponse;

Result<std::vector<ConfigEntry>> EntriesFor(const BrokerContext& ctx,
                                            const Req::DescribeConfigsResource& r) {
  if (r.resource_type == kResourceTopic) {
    HR_RETURN_IF_ERROR(ValidateTopicName(r.resource_name));
    if (ClusterState* cluster = ctx.state->cluster(); cluster != nullptr) {
      // Any broker answers from the cluster's view of /config/topics, with
      // or without a replica of the topic (docs/cluster.md).
      auto view = cluster->view();
      const TopicView* t = view ? view->FindTopic(r.resource_name) : nullptr;
      if (t == nullptr) {
        return KafkaStatus(KafkaError::kUnknownTopicOrPartition,
                           "Topic " + r.resource_name + " does not exist.");
      }
      return DescribeTopicConfigs(*ctx.topics().defaults(), t->configs);
    }
    return ctx.topics().DescribeTopicConfig(r.resource_name);
  }
  if (r.resource_type == kResourceBroker) {
    HR_RETURN_IF_ERROR(CheckBrokerResourceName(r.resource_name, ctx.node_id));
    return DescribeBrokerConfigs(ctx, /*cluster_default_only=*/r.resource_name.empty());
  }
  if (r.resource_type == kResourceGroup) return DescribeGroupConfigs(ctx, r.resource_name);
  return UnsupportedResourceType(r.resource_type);
}

bool Wanted(const Req::DescribeConfigsResource& r, const std::string& name) {
  if (!r.configuration_keys || r.configuration_keys->empty()) return true;
  const auto& keys = *r.configuration_keys;
  return std::find(keys.begin(), keys.end(), name) != keys.end();
}

Resp::DescribeConfigsResourceResult ToWire(const ConfigEntry& e, const Req& req) {
  Resp::DescribeConfigsResourceResult c;
  c.name = e.name;
  c.value = e.sensitive ? std::nullopt : e.value;
  c.read_only = e.read_only;
  c.is_default = e.is_default;
  c.config_source = static_cast<int8_t>(e.source);
  c.is_sensitive = e.sensitive;
  c.config_type = static_cast<int8_t>(e.type);
  if (req.include_documentation && !e.documentation.empty()) {
    c.documentation = e.documentation;
  } else {
    c.documentation = std::nullopt;
  }
  if (req.include_synonyms) {
    for (const ConfigSynonym& s : e.synonyms) {
      Resp::DescribeConfigsSynonym syn;
      syn.name = s.name;
      syn.value = e.sensitive ? std::nullopt : s.value;
      syn.source = static_cast<int8_t>(s.source);
      c.synonyms.push_back(std::move(syn));
    }
  }
  return c;
}

void HandleDescribeConfigs(BrokerContext& ctx, Req& req, Request request) {
  Resp resp;
  for (const auto& r : req.resources) {
    Resp::DescribeConfigsResult out;
    out.resource_type = r.resource_type;
    out.resource_name = r.resource_name;
    Status access = RequireConfigAccess(ctx, request, AclOperation::kDescribeConfigs,
                                        r.resource_type, r.resource_name);
    Result<std::vector<ConfigEntry>> entries =
        access.ok() ? EntriesFor(ctx, r) : Result<std::vector<ConfigEntry>>(access);
    if (!entries.ok()) {
      out.error_code = Code(ToKafkaError(entries.status()));
      out.error_message = entries.status().message();
    } else {
      out.error_code = Code(KafkaError::kNone);
      out.error_message = std::nullopt;
      for (const ConfigEntry& e : *entries) {
        if (Wanted(r, e.name)) out.configs.push_back(ToWire(e, req));
      }
    }
    resp.results.push_back(std::move(out));
  }
  request.Reply(resp);
}

}  // namespace

extern const ApiHandler kDescribeConfigsHandler =
    MakeHandler<protocol::DescribeConfigsRequest, HandleDescribeConfigs>(1, 4);

}  // namespace headrace::broker
