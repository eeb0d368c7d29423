// How handlers find topics in cluster mode (docs/cluster.md): the data path
// serves local replicas; what exists is the ClusterView; creations go to the
// control plane (ControlRequests). On a single node these fall back to the
// TopicRegistry.
#pragma once

#include <memory>
#include <set>
#include <string>

#include "broker/api/handler.h"
#include "broker/base/kafka_error.h"

namespace headrace::broker {

// The local topic for a produce or fetch: single node, FindOrAutoCreate;
// cluster mode, the local replicas' topic, or NOT_LEADER_OR_FOLLOWER (the
// topic exists in the cluster, no replica here), LEADER_NOT_AVAILABLE (being
// auto-created), UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_EXCEPTION.
Result<std::shared_ptr<const Topic>> FindTopicForData(BrokerContext& ctx, const std::string& name);

// Cluster mode: asks the control plane to create `name` with the broker
// defaults (once per name while pending) and returns the status a client
// gets meanwhile: LEADER_NOT_AVAILABLE, or INVALID_TOPIC_EXCEPTION /
// UNKNOWN_TOPIC_OR_PARTITION (auto-creation off).
Status RequestAutoCreate(BrokerContext& ctx, const std::string& name);

// Cluster mode: asks the control plane to create `name` (once while a
// request for that name is pending; the replication factor is capped at the
// live brokers). Fire and forget: failures are logged.
void RequestTopicCreation(BrokerContext& ctx, const std::string& name, int32_t partitions,
                          int32_t replication_factor, const ConfigMap& configs);

// Cluster mode: submits a control request and replies to `req` on its loop
// with `reply(ok, result_json)`; timeout 30 s unless `timeout_ms` > 0.
void SubmitControlRequest(BrokerContext& ctx, const Request& req, std::string kind,
                          std::string payload, int32_t timeout_ms,
                          std::function<void(bool ok, const std::string& result)> reply);

}  // namespace headrace::broker

namespace headrace::broker {

// The partition list and index of Produce and Fetch responses (their
// schemas name them differently).
inline auto& PartitionsOf(protocol::ProduceResponse::TopicProduceResponse& t) {
  return t.partition_responses;
}
inline auto& PartitionsOf(protocol::FetchResponse::FetchableTopicResponse& t) {
  return t.partitions;
}
inline int32_t PartitionIndexOf(const protocol::ProduceResponse::PartitionProduceResponse& p) {
  return p.index;
}
inline int32_t PartitionIndexOf(const protocol::FetchResponse::PartitionData& p) {
  return p.partition_index;
}
inline auto& PartitionsOf(protocol::ShareFetchResponse::ShareFetchableTopicResponse& t) {
  return t.partitions;
}
inline auto& PartitionsOf(protocol::ShareAcknowledgeResponse::ShareAcknowledgeTopicResponse& t) {
  return t.partitions;
}
inline int32_t PartitionIndexOf(const protocol::ShareFetchResponse::PartitionData& p) {
  return p.partition_index;
}
inline int32_t PartitionIndexOf(const protocol::ShareAcknowledgeResponse::PartitionData& p) {
  return p.partition_index;
}

// KIP-951: a partition answered NOT_LEADER_OR_FOLLOWER or
// FENCED_LEADER_EPOCH gets `current_leader` (the leader and epoch this
// broker's view names) and the response lists that leader's endpoint in
// `node_endpoints`, so the client goes there without a Metadata round
// trip. Works for Produce, Fetch, ShareFetch and ShareAcknowledge
// responses (the fields exist only in the versions that carry them; the
// codec leaves them out below). `name_of`
// gives a response topic's name. No-op on a single node.
template <typename Resp, typename NameOf>
void AddLeaderHints(const BrokerContext& ctx, Resp* resp, NameOf name_of) {
  ClusterState* cluster = ctx.state->cluster();
  if (cluster == nullptr) return;
  const auto view = cluster->view();
  std::set<int32_t> listed;
  for (auto& t : resp->responses) {
    const TopicView* topic = view->FindTopic(name_of(t));
    if (topic == nullptr) continue;
    for (auto& p : PartitionsOf(t)) {
      if (p.error_code != Code(KafkaError::kNotLeaderOrFollower) &&
          p.error_code != Code(KafkaError::kFencedLeaderEpoch)) {
        continue;
      }
      const int32_t index = PartitionIndexOf(p);
      if (index < 0 || index >= static_cast<int32_t>(topic->partitions.size())) continue;
      const PartitionAssignment& a = topic->partitions[index];
      const BrokerEndpoint* leader = view->FindBroker(a.leader);
      if (leader == nullptr) continue;
      p.current_leader.leader_id = a.leader;
      p.current_leader.leader_epoch = a.leader_epoch;
      if (listed.insert(a.leader).second) {
        auto& e = resp->node_endpoints.emplace_back();
        e.node_id = leader->id;
        e.host = leader->host;
        e.port = leader->port;
        e.rack = leader->rack;
      }
    }
  }
}

}  // namespace headrace::broker
