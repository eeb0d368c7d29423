// CreateTopics, DeleteTopics and CreatePartitions in cluster mode: checked
// here as far as the data plane can (names, configs, duplicates), then
// carried out by the control plane through ZooKeeper (ControlRequests,
// docs/cluster.md) and answered with its per-topic results.
#pragma once

#include "broker/api/handler.h"

namespace headrace::broker {

void ClusterCreateTopics(BrokerContext& ctx, protocol::CreateTopicsRequest& req, Request request);
void ClusterDeleteTopics(BrokerContext& ctx, protocol::DeleteTopicsRequest& req, Request request);
void ClusterCreatePartitions(BrokerContext& ctx, protocol::CreatePartitionsRequest& req,
                             Request request);

}  // namespace headrace::broker
