// FindCoordinator (key 10), v0..6. A single node coordinates every group
// (key type 0) and every transactional id (key type 1); in cluster mode a
// group's coordinator is the leader of the group's partition of
// __consumer_offsets and a transactional id's the leader of the id's
// partition of __transaction_state (both abs(Java hashCode(key)) %
// partitions, coordinator/base/group_partition.h; each topic created by the first
// FindCoordinator that needs it, with offsets.topic.num.partitions /
// transaction.state.log.num.partitions partitions). Other key types (2 =
// share groups, v6) are INVALID_REQUEST. v4+ batches keys (coordinator_keys)
// and answers per key.
#include "broker/api/cluster_lookup.h"
#include "broker/api/authorize.h"
#include "broker/api/group_lookup.h"
#include "broker/api/handler.h"
#include "broker/api/txn_api.h"
#include "broker/coordinator/group/group_config.h"
#include "broker/coordinator/base/group_partition.h"
#include "broker/base/kafka_error.h"
#include "broker/coordinator/txn/txn_config.h"

namespace headrace::broker {
namespace {

using Req = protocol::FindCoordinatorRequest;
using Resp = protocol::FindCoordinatorResponse;

constexpr int8_t kKeyTypeGroup = 0;
constexpr int8_t kKeyTypeTransaction = 1;

KafkaError ErrorFor(const BrokerContext& ctx, int8_t key_type, const std::string& key) {
  if (key_type != kKeyTypeGroup && key_type != kKeyTypeTransaction)
    return KafkaError::kInvalidRequest;
  if (ctx.state->cluster() != nullptr) return KafkaError::kNone;
  const bool up = key_type == kKeyTypeGroup ? GroupCoordinatorFor(ctx, key).coordinator != nullptr
                                            : TxnCoordinatorFor(ctx, key).coordinator != nullptr;
  return up ? KafkaError::kNone : KafkaError::kCoordinatorNotAvailable;
}

// Cluster mode: the coordinators' logs are the partitions of
// __consumer_offsets and __transaction_state; the first FindCoordinator of
// a cluster without the one it needs asks for its creation. The partition
// count is fixed then, once: a later change of offsets.topic.num.partitions
// or transaction.state.log.num.partitions does not repartition the topic
// (as Kafka).
void EnsureCoordinatorTopic(BrokerContext& ctx, int8_t key_type) {
  ClusterState* cluster = ctx.state->cluster();
  if (cluster == nullptr) return;
  const char* topic = key_type == kKeyTypeTransaction ? kTransactionStateTopic
                                                      : kConsumerOffsetsTopic;
  if (cluster->view()->FindTopic(topic)) return;
  if (cluster->view()->brokers.empty()) return;  // no view yet
  if (key_type == kKeyTypeTransaction) {
    const txn::TxnConfig& t = *ctx.txn_config;
    RequestTopicCreation(ctx, topic, t.log_num_partitions, t.log_replication_factor,
                         {{"cleanup.policy", "compact"},
                          {"min.insync.replicas", std::to_string(t.log_min_isr)},
                          {"segment.bytes", std::to_string(t.log_segment_bytes)}});
    return;
  }
  const group::GroupConfig& g = *ctx.group_config;
  RequestTopicCreation(ctx, topic, g.offsets_topic_num_partitions,
                       g.offsets_topic_replication_factor,
                       {{"cleanup.policy", "compact"},
                        {"segment.bytes", std::to_string(g.log_segment_bytes)}});
}

// The leader of `topic`'s partition `key` maps to (`partition_of` given
// the partition count), this node on a single node, -1 when unknown.
int32_t LeaderOfKey(const BrokerContext& ctx, const char* topic, std::string_view key,
                    int32_t (*partition_of)(std::string_view, int32_t)) {
  ClusterState* cluster = ctx.state->cluster();
  if (cluster == nullptr) return ctx.node_id;
  auto view = cluster->view();
  const TopicView* t = view->FindTopic(topic);
  if (t == nullptr || t->partitions.empty()) return -1;
  const int32_t p = partition_of(key, static_cast<int32_t>(t->partitions.size()));
  for (const auto& pv : t->partitions)
    if (pv.partition == p) return pv.leader;
  return -1;
}

// ACLs: DESCRIBE on the group / transactional id a key names.
KafkaError Denied(const BrokerContext& ctx, const Request& request, int8_t key_type,
                  const std::string& key) {
  if (key_type == kKeyTypeTransaction) {
    return AuthorizedOnTxnId(ctx, request, AclOperation::kDescribe, key)
               ? KafkaError::kNone
               : KafkaError::kTransactionalIdAuthorizationFailed;
  }
  return AuthorizedOnGroup(ctx, request, AclOperation::kDescribe, key)
             ? KafkaError::kNone
             : KafkaError::kGroupAuthorizationFailed;
}

void HandleFindCoordinator(BrokerContext& ctx, Req& req, Request request) {
  std::vector<KafkaError> denied;  // per key (one key before v4)
  if (request.version() >= 4) {
    for (const std::string& key : req.coordinator_keys)
      denied.push_back(Denied(ctx, request, req.key_type, key));
  } else {
    denied.push_back(Denied(ctx, request, req.key_type, req.key));
  }
  const bool any_allowed = std::count(denied.begin(), denied.end(), KafkaError::kNone) > 0;
  if (any_allowed && (req.key_type == kKeyTypeGroup || req.key_type == kKeyTypeTransaction)) {
    EnsureCoordinatorTopic(ctx, req.key_type);
  }
  auto coordinator_of = [&](const std::string& key) {
    return req.key_type == kKeyTypeTransaction ? ctx.txn_coordinator_id(key)
                                               : ctx.group_coordinator_id(key);
  };
  Resp resp;
  auto fill = [&](const std::string& key, KafkaError e, int32_t& node, std::string& host,
                  int32_t& port, int16_t& code, std::optional<std::string>& message) {
    if (e == KafkaError::kNone) e = ErrorFor(ctx, req.key_type, key);
    if (e == KafkaError::kNone) {
      node = coordinator_of(key);
      if (!ctx.FindEndpoint(node, &host, &port, request.session().listener_name)) {
        e = KafkaError::kCoordinatorNotAvailable;
      }
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
  if (request.version() >= 4) {
    for (size_t i = 0; i < req.coordinator_keys.size(); ++i) {
      Resp::Coordinator c;
      c.key = req.coordinator_keys[i];
      fill(c.key, denied[i], c.node_id, c.host, c.port, c.error_code, c.error_message);
      resp.coordinators.push_back(std::move(c));
    }
  } else {
    fill(req.key, denied[0], resp.node_id, resp.host, resp.port, resp.error_code,
         resp.error_message);
  }
  request.Reply(resp);
}

}  // namespace

void EnsureConsumerOffsetsTopic(BrokerContext& ctx) { EnsureCoordinatorTopic(ctx, kKeyTypeGroup); }

int32_t BrokerContext::group_coordinator_id(std::string_view group_id) const {
  return LeaderOfKey(*this, kConsumerOffsetsTopic, group_id, group::GroupPartition);
}

int32_t BrokerContext::txn_coordinator_id(std::string_view transactional_id) const {
  return LeaderOfKey(*this, kTransactionStateTopic, transactional_id, group::GroupPartition);
}

extern const ApiHandler kFindCoordinatorHandler =
    MakeHandler<protocol::FindCoordinatorRequest, HandleFindCoordinator>(0, 6);

}  // namespace headrace::broker
