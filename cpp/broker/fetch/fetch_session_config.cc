#include "broker/fetch/fetch_session_config.h"

namespace headrace::broker::fetch {
namespace {

const std::vector<ConfigKey<FetchSessionConfig>>& Keys() {
  static const std::vector<ConfigKey<FetchSessionConfig>> keys = {
      IntConfigKey("max.incremental.fetch.session.cache.slots",
                   "Most incremental fetch sessions (KIP-227) the broker keeps at once.",
                   &FetchSessionConfig::cache_slots, 0, 0x7fffffff),
  };
  return keys;
}

HR_REGISTER_CONFIG_FAMILY(FetchSessionConfig, "fetch session", &Keys);

}  // namespace

Status FetchSessionConfig::Set(const std::string& key, const std::string& value) {
  return SetFromTable(Keys(), *this, key, value, "fetch session");
}

std::vector<SettingDoc> FetchSessionConfig::Describe() const { return DescribeTable(Keys(), *this); }

Status FetchSessionConfig::Extract(std::map<std::string, std::string>& props) {
  return ExtractFromTable(Keys(), *this, props);
}

}  // namespace headrace::broker::fetch
