// CreateTopics, DeleteTopics and CreatePartitions in cluster mode: checked
// here as far as the data plane can (names, configs, duplicates), then
// carried out by the control plane through ZooKeeper (ControlRequests,
// docs/cluster.md) and answered with its per-topic results.
#pragma once

#include <functional>
#include <string>

#include "broker/api/handler.h"
#include "broker/base/json.h"

namespace headrace::broker {

// Hands one control request (`kind`, `payload`) to the control plane and
// waits for its answer, {"error_code": N, "error_message": ...}: OK for 0,
// else a KafkaStatus with that code. REQUEST_TIMED_OUT when it is not
// answered within 30 s. Blocks: call it on the admin worker. Cluster mode
// only (ctx.state->cluster() != null).
Status CallControlPlane(const BrokerContext& ctx, const std::string& kind, json::Object payload);
// A control request's completion (ControlRequests::Completion arguments)
// read as above: OK for error_code 0, else that KafkaStatus;
// REQUEST_TIMED_OUT when it was not answered.
Status ControlPlaneAnswer(bool ok, const std::string& result);

// AlterConfigs / IncrementalAlterConfigs on a topic in cluster mode, on
// any broker (a replica of the topic or not): `next` turns the topic's
// current overrides (the cluster view of /config/topics/<topic>) into the
// new ones; they are checked against the broker defaults and, unless
// `validate_only`, replace /config/topics/<topic> through the control
// plane. Every broker applies them from there. Errors:
// UNKNOWN_TOPIC_OR_PARTITION, INVALID_CONFIG / INVALID_REQUEST (from
// `next` or the check), REQUEST_TIMED_OUT.
Status ClusterAlterTopicConfig(const BrokerContext& ctx, const std::string& topic,
                               const std::function<Result<ConfigMap>(const ConfigMap&)>& next,
                               bool validate_only);

void ClusterCreateTopics(BrokerContext& ctx, protocol::CreateTopicsRequest& req, Request request);
void ClusterDeleteTopics(BrokerContext& ctx, protocol::DeleteTopicsRequest& req, Request request);
void ClusterCreatePartitions(BrokerContext& ctx, protocol::CreatePartitionsRequest& req,
                             Request request);

}  // namespace headrace::broker
