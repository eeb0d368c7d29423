// Applies a ClusterView to this broker's replicas (the data-plane half of
// Kafka's LeaderAndIsr + StopReplica, docs/cluster.md): opens the replicas
// assigned to this broker, makes each the leader or a follower at the
// view's leader epoch (never going back to an older epoch), applies ISR
// changes of partitions it leads, removes replicas assigned away and topics
// deleted from the cluster. Returns what the replica fetchers must follow.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "broker/cluster/cluster_view.h"
#include "broker/replication/replica_fetcher.h"
#include "broker/topics/topic_registry.h"

namespace headrace::broker {

struct ApplyReport {
  std::vector<replication::FollowedPartition> follow;  // for the replica fetchers
  int became_leader = 0;
  int became_follower = 0;
  int isr_updates = 0;
  std::vector<std::string> errors;  // one line per partition that failed
};

// `seen_topics`: names of topics seen in an earlier view (kept by the
// caller across calls); a local topic that was seen and is gone now was
// deleted in the cluster and is deleted here. A local topic never seen (an
// earlier single-node data dir) is kept but not served.
ApplyReport ApplyClusterView(TopicRegistry& topics, const ClusterView& view, int32_t self,
                             std::set<std::string>* seen_topics);

}  // namespace headrace::broker
