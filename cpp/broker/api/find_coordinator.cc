// FindCoordinator (key 10), v0..6. This single node coordinates every group
// (key type 0) and, so that transactional clients get an answer, every
// transactional id (key type 1); transactions themselves are another
// module's work. Other key types (2 = share groups, v6) are INVALID_REQUEST.
// v4+ batches keys (coordinator_keys) and answers per key.
#include "broker/api/cluster_lookup.h"
#include "broker/api/handler.h"
#include "broker/group/group_config.h"
#include "broker/kafka_error.h"

namespace headrace::broker {
namespace {

using Req = protocol::FindCoordinatorRequest;
using Resp = protocol::FindCoordinatorResponse;

constexpr int8_t kKeyTypeGroup = 0;
constexpr int8_t kKeyTypeTransaction = 1;

KafkaError ErrorFor(const BrokerContext& ctx, int8_t key_type) {
  if (key_type != kKeyTypeGroup && key_type != kKeyTypeTransaction)
    return KafkaError::kInvalidRequest;
  if (ctx.state->cluster() == nullptr && ctx.coordinator() == nullptr) {
    return KafkaError::kCoordinatorNotAvailable;
  }
  return KafkaError::kNone;
}

// Cluster mode: the group coordinator's log is __consumer_offsets-0; the
// first FindCoordinator of a cluster without it asks for its creation.
void EnsureOffsetsTopic(BrokerContext& ctx) {
  ClusterState* cluster = ctx.state->cluster();
  if (cluster == nullptr || cluster->view()->FindTopic(kConsumerOffsetsTopic)) return;
  if (cluster->view()->brokers.empty()) return;  // no view yet
  const group::GroupConfig& g = *ctx.group_config;
  RequestTopicCreation(ctx, kConsumerOffsetsTopic, 1, g.offsets_topic_replication_factor,
                       {{"cleanup.policy", "compact"},
                        {"segment.bytes", std::to_string(g.log_segment_bytes)}});
}

void HandleFindCoordinator(BrokerContext& ctx, Req& req, Request request) {
  EnsureOffsetsTopic(ctx);
  Resp resp;
  auto fill = [&](KafkaError e, int32_t& node, std::string& host, int32_t& port,
                  int16_t& code, std::optional<std::string>& message) {
    if (e == KafkaError::kNone) {
      node = ctx.group_coordinator_id();
      if (!ctx.FindEndpoint(node, &host, &port)) e = KafkaError::kCoordinatorNotAvailable;
    }
    code = Code(e);
    if (e == KafkaError::kNone) {
      message = std::nullopt;
    } else {
      node = -1;
      port = -1;
      message = KafkaErrorName(e);
    }
  };
  KafkaError e = ErrorFor(ctx, req.key_type);
  if (request.version() >= 4) {
    for (const std::string& key : req.coordinator_keys) {
      Resp::Coordinator c;
      c.key = key;
      fill(e, c.node_id, c.host, c.port, c.error_code, c.error_message);
      resp.coordinators.push_back(std::move(c));
    }
  } else {
    fill(e, resp.node_id, resp.host, resp.port, resp.error_code, resp.error_message);
  }
  request.Reply(resp);
}

}  // namespace

int32_t BrokerContext::group_coordinator_id() const {
  ClusterState* cluster = state->cluster();
  if (cluster == nullptr) return node_id;
  auto view = cluster->view();
  const TopicView* t = view->FindTopic(kConsumerOffsetsTopic);
  if (t == nullptr || t->partitions.empty()) return -1;
  return t->partitions[0].leader;
}

extern const ApiHandler kFindCoordinatorHandler =
    MakeHandler<protocol::FindCoordinatorRequest, HandleFindCoordinator>(0, 6);

}  // namespace headrace::broker
