// A family of broker settings as one table (DESIGN.md: one config table per
// family): each key with its one-line doc and how it is set and read. The
// group (group/group_config.cc) and transaction (txn/txn_config.cc)
// families use it; Set/Describe/Extract are the same for every family.
#pragma once

#include <charconv>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "headrace/status.h"

namespace headrace::broker {

inline Result<int64_t> ParseIntSetting(const std::string& key, const std::string& v, int64_t min,
                                       int64_t max) {
  int64_t out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || p != v.data() + v.size() || out < min || out > max)
    return Status::InvalidArgument(key + ": must be an integer in [" + std::to_string(min) + ", " +
                                   std::to_string(max) + "], got '" + v + "'");
  return out;
}

template <typename Config>
struct ConfigKey {
  const char* name;
  const char* doc;
  std::function<Status(Config&, const std::string& value)> set;
  std::function<std::string(const Config&)> get;
};

// An integer key in [min, max] stored as value * scale in `field`.
template <typename Config, typename T>
ConfigKey<Config> IntConfigKey(const char* name, const char* doc, T Config::*field, int64_t min,
                               int64_t max, int64_t scale = 1) {
  return ConfigKey<Config>{
      name, doc,
      [=](Config& c, const std::string& value) -> Status {
        HR_ASSIGN_OR_RETURN(int64_t v, ParseIntSetting(name, value, min, max));
        c.*field = static_cast<T>(v * scale);
        return Status::OK();
      },
      [=](const Config& c) { return std::to_string(c.*field / scale); }};
}

struct SettingDoc {
  std::string name;
  std::string value;
  std::string doc;
};

// NotFound for a key outside `keys`; the key's InvalidArgument otherwise.
template <typename Config>
Status SetFromTable(const std::vector<ConfigKey<Config>>& keys, Config& c, const std::string& key,
                    const std::string& value, const char* family) {
  for (const ConfigKey<Config>& k : keys)
    if (key == k.name) return k.set(c, value);
  return Status::NotFound(std::string("not a ") + family + " setting: " + key);
}

template <typename Config>
std::vector<SettingDoc> DescribeTable(const std::vector<ConfigKey<Config>>& keys, const Config& c) {
  std::vector<SettingDoc> out;
  for (const ConfigKey<Config>& k : keys) out.push_back({k.name, k.get(c), k.doc});
  return out;
}

// Moves every key of the table out of `props` into `c`.
template <typename Config>
Status ExtractFromTable(const std::vector<ConfigKey<Config>>& keys, Config& c,
                        std::map<std::string, std::string>& props) {
  for (auto it = props.begin(); it != props.end();) {
    Status st = SetFromTable(keys, c, it->first, it->second, "");
    if (st.code() == StatusCode::kNotFound) {
      ++it;
      continue;
    }
    HR_RETURN_IF_ERROR(st);
    it = props.erase(it);
  }
  return Status::OK();
}

}  // namespace headrace::broker
