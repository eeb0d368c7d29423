#include "broker/replication/replication_quota.h"

#include <algorithm>

#include "broker/partition/partition.h"

namespace headrace::broker::replication {

using Key = ConfigKey<ReplicationQuotaConfig>;

namespace {
Key RateKey(const char* name, const char* doc, int64_t ReplicationQuotaConfig::*field) {
  Key k = IntConfigKey<ReplicationQuotaConfig>(name, doc, field, 0, INT64_MAX);
  k.mode = UpdateMode::kClusterWide;  // Kafka: a dynamic broker config
  return k;
}
}  // namespace

const std::vector<Key>& ReplicationQuotaKeys() {
  static const std::vector<Key> keys = {
      RateKey("leader.replication.throttled.rate",
              "Bytes/s this broker sends to throttled followers (leader.replication.throttled."
              "replicas); Long.MAX_VALUE = unlimited.",
              &ReplicationQuotaConfig::leader_rate),
      RateKey("follower.replication.throttled.rate",
              "Bytes/s this broker fetches for throttled replicas it follows (follower."
              "replication.throttled.replicas); Long.MAX_VALUE = unlimited.",
              &ReplicationQuotaConfig::follower_rate),
      IntConfigKey<ReplicationQuotaConfig>("replication.quota.window.num",
                                           "Windows the replication throttle rates are measured over.",
                                           &ReplicationQuotaConfig::window_num, 1, INT32_MAX),
      IntConfigKey<ReplicationQuotaConfig>("replication.quota.window.size.seconds",
                                           "Length of one replication throttle window.",
                                           &ReplicationQuotaConfig::window_size_seconds, 1,
                                           INT32_MAX),
  };
  return keys;
}

HR_REGISTER_CONFIG_FAMILY(ReplicationQuotaConfig, "replication quota", &ReplicationQuotaKeys);

Status ReplicationQuotaConfig::Set(const std::string& key, const std::string& value) {
  return SetFromTable(ReplicationQuotaKeys(), *this, key, value, "replication quota");
}

Status ReplicationQuotaConfig::Extract(std::map<std::string, std::string>& props) {
  return ExtractFromTable(ReplicationQuotaKeys(), *this, props);
}

ReplicationQuota::ReplicationQuota(int32_t window_num, int32_t window_size_seconds,
                                   int64_t bytes_per_second)
    : bound_(bytes_per_second),
      window_size_seconds_(window_size_seconds),
      rate_(window_num, int64_t{window_size_seconds} * 1000) {}


bool ReplicationQuota::Exceeded() const {
  const int64_t bound = bound_.load(std::memory_order_relaxed);
  if (bound == INT64_MAX) return false;
  std::lock_guard<std::mutex> l(mu_);
  return rate_.Rate(Partition::SteadyNowMs()) > static_cast<double>(bound);
}

int64_t ReplicationQuota::MaxReadBytes() const {
  const int64_t bound = bound_.load(std::memory_order_relaxed);
  if (bound >= INT64_MAX / window_size_seconds_) return INT64_MAX;
  return std::max<int64_t>(bound * window_size_seconds_, 1);
}

void ReplicationQuota::Record(int64_t bytes) {
  if (bytes <= 0) return;
  std::lock_guard<std::mutex> l(mu_);
  rate_.Record(static_cast<double>(bytes), Partition::SteadyNowMs());
}

}  // namespace headrace::broker::replication
