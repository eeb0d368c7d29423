// CreateTopics, DeleteTopics and CreatePartitions in cluster mode: checked
// here as far as the data plane can (names, configs, duplicates), then
// carried out by the control plane through ZooKeeper (ControlRequests,
// docs/cluster.md) and answered with its per-topic results.
#pragma once

#include <string>

#include "broker/api/handler.h"
#include "broker/json.h"

namespace headrace::broker {

// Hands one control request (`kind`, `payload`) to the control plane and
// waits for its answer, {"error_code": N, "error_message": ...}: OK for 0,
// else a KafkaStatus with that code. REQUEST_TIMED_OUT when it is not
// answered within 30 s. Blocks: call it on the admin worker. Cluster mode
// only (ctx.state->cluster() != null).
Status CallControlPlane(const BrokerContext& ctx, const std::string& kind, json::Object payload);

// AlterConfigs / IncrementalAlterConfigs on a topic in cluster mode: the
// topic's new overrides `configs` (validated by the caller) replace
// /config/topics/<topic> through the control plane; every broker applies
// them from there.
Status ClusterReplaceTopicConfig(const BrokerContext& ctx, const std::string& topic,
                                 const ConfigMap& configs);

void ClusterCreateTopics(BrokerContext& ctx, protocol::CreateTopicsRequest& req, Request request);
void ClusterDeleteTopics(BrokerContext& ctx, protocol::DeleteTopicsRequest& req, Request request);
void ClusterCreatePartitions(BrokerContext& ctx, protocol::CreatePartitionsRequest& req,
                             Request request);

}  // namespace headrace::broker
