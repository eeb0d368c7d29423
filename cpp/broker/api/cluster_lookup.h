// How handlers find topics in cluster mode (docs/cluster.md): the data path
// serves local replicas; what exists is the ClusterView; creations go to the
// control plane (ControlRequests). On a single node these fall back to the
// TopicRegistry.
#pragma once

#include <memory>
#include <string>

#include "broker/api/handler.h"

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
