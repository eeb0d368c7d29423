#include "broker/security/quota/quota_config.h"

namespace headrace::broker::quota {
namespace {

using QuotaKey = ConfigKey<QuotaConfig>;

const std::vector<QuotaKey>& Keys() {
  static const std::vector<QuotaKey> keys = {
      IntConfigKey<QuotaConfig>(
          "quota.window.num",
          "The number of samples to retain in memory for client quotas.",
          &QuotaConfig::window_num, 1, INT32_MAX),
      IntConfigKey<QuotaConfig>(
          "quota.window.size.seconds",
          "The time span of each sample for client quotas.",
          &QuotaConfig::window_size_seconds, 1, INT32_MAX),
  };
  return keys;
}

HR_REGISTER_CONFIG_FAMILY(QuotaConfig, "quota", &Keys);

}  // namespace

Status QuotaConfig::Set(const std::string& key, const std::string& value) {
  return SetFromTable(Keys(), *this, key, value, "quota");
}

std::vector<SettingDoc> QuotaConfig::Describe() const { return DescribeTable(Keys(), *this); }

Status QuotaConfig::Extract(std::map<std::string, std::string>& props) {
  return ExtractFromTable(Keys(), *this, props);
}

}  // namespace headrace::broker::quota
