// Settings of client quotas (docs/security.md "Quotas", docs/configuration.md):
// the sampled windows every quota rate is measured over, as Kafka's
// quota.window.num / quota.window.size.seconds. The quotas themselves are
// dynamic (AlterClientQuotas; client_quota_store.h).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "broker/config/config_table.h"

namespace headrace::broker::quota {

struct QuotaConfig {
  // quota.window.num: samples kept per rate (Kafka's default 11).
  int window_num = 11;
  // quota.window.size.seconds: length of one sample (Kafka's default 1).
  int window_size_seconds = 1;

  Status Set(const std::string& key, const std::string& value);
  std::vector<SettingDoc> Describe() const;
  // Moves every quota setting out of `props`. Errors as Set.
  Status Extract(std::map<std::string, std::string>& props);
};

}  // namespace headrace::broker::quota
