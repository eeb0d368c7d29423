// Cluster mode: the client quotas ZooKeeper holds, as the control plane
// hands them over in each cluster state (python/headrace/cluster/member.py):
//   "client_quotas": {"users/alice": {"producer_byte_rate": "1048576"}, ...}
// — the znodes under /config/users and /config/clients that carry quota
// keys, named by their path relative to /config, values as Kafka's strings.
// A state without the member leaves the quotas as they are.
#pragma once

#include <string_view>

#include "broker/security/quota/client_quota_store.h"

namespace headrace::broker::quota {

// Parses `state_json` and replaces the store's table when it names quotas.
void ApplyClusterQuotas(std::string_view state_json, ClientQuotaStore* store);

}  // namespace headrace::broker::quota
