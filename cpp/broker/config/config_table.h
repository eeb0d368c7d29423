// A family of broker settings as one table (DESIGN.md: one config table per
// family): each key with its one-line doc and how it is set and read. The
// group (coordinator/group/group_config.cc) and transaction (coordinator/txn/txn_config.cc)
// families use it; Set/Describe/Extract are the same for every family.
#pragma once

#include <charconv>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
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

// DescribeConfigs ConfigSource (v1+), numbered as on the wire.
enum class ConfigSource : int8_t {
  kUnknown = 0,
  kDynamicTopicConfig = 1,
  kDynamicBrokerConfig = 2,
  kDynamicDefaultBrokerConfig = 3,
  kStaticBrokerConfig = 4,
  kDefaultConfig = 5,
};

// DescribeConfigs ConfigType (v3+), numbered as on the wire.
enum class ConfigType : int8_t {
  kUnknown = 0, kBoolean = 1, kString = 2, kInt = 3, kShort = 4,
  kLong = 5, kDouble = 6, kList = 7, kClass = 8, kPassword = 9,
};

// "int", "long", ... as the docs name types.
inline const char* ConfigTypeName(ConfigType t) {
  switch (t) {
    case ConfigType::kBoolean: return "boolean";
    case ConfigType::kString: return "string";
    case ConfigType::kInt: return "int";
    case ConfigType::kShort: return "short";
    case ConfigType::kLong: return "long";
    case ConfigType::kDouble: return "double";
    case ConfigType::kList: return "list";
    case ConfigType::kClass: return "class";
    case ConfigType::kPassword: return "password";
    default: return "unknown";
  }
}

// How a broker key may change (Kafka's "Update Mode"): read-only keys only
// through server.properties and a restart; per-broker keys also through
// AlterConfigs on BROKER resource "<node id>"; cluster-wide keys also on
// the cluster default "" (dynamic_broker_config.h).
enum class UpdateMode : int8_t { kReadOnly = 0, kPerBroker = 1, kClusterWide = 2 };
inline const char* UpdateModeName(UpdateMode m) {
  return m == UpdateMode::kReadOnly ? "read-only"
         : m == UpdateMode::kPerBroker ? "per-broker" : "cluster-wide";
}

template <typename Config>
struct ConfigKey {
  const char* name;
  const char* doc;
  std::function<Status(Config&, const std::string& value)> set;
  std::function<std::string(const Config&)> get;
  ConfigType type = ConfigType::kString;
  // Kafka's update mode. A family that declares a key dynamic applies its
  // changes itself (DynamicBrokerConfig::Subscribe).
  UpdateMode mode = UpdateMode::kReadOnly;
  std::string valid{};  // valid values / range as the docs show them ("" = any)
};

// "[min,...]" (no upper bound worth showing) or "[min,...,max]".
inline std::string IntRangeText(int64_t min, int64_t max) {
  std::string out = "[";
  out += std::to_string(min);
  out += ",...";
  if (max < INT32_MAX) {
    out += ',';
    out += std::to_string(max);
  }
  out += ']';
  return out;
}

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
      [=](const Config& c) { return std::to_string(c.*field / scale); },
      max > INT32_MAX ? ConfigType::kLong : ConfigType::kInt,
      UpdateMode::kReadOnly,
      IntRangeText(min, max)};
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

// Moves every key `set` takes out of `props`: `set` answers NotFound for a
// key that is not its own, another error for a bad value (returned).
template <typename Setter>
Status ExtractKeys(std::map<std::string, std::string>& props, Setter set) {
  for (auto it = props.begin(); it != props.end();) {
    Status st = set(it->first, it->second);
    if (st.code() == StatusCode::kNotFound) {
      ++it;
      continue;
    }
    HR_RETURN_IF_ERROR(st);
    it = props.erase(it);
  }
  return Status::OK();
}

// Moves every key of the table out of `props` into `c`.
template <typename Config>
Status ExtractFromTable(const std::vector<ConfigKey<Config>>& keys, Config& c,
                        std::map<std::string, std::string>& props) {
  return ExtractKeys(props, [&](const std::string& key, const std::string& value) {
    return SetFromTable(keys, c, key, value, "");
  });
}

// One key of a registered family as DescribeConfigs (BROKER) and the
// generated docs show it.
struct FamilySetting {
  std::string name;
  std::string value;          // as configured at start
  std::string default_value;  // built in
  std::string doc;
  ConfigType type = ConfigType::kString;
  UpdateMode mode = UpdateMode::kReadOnly;
  std::string valid;
  bool set_at_start = false;  // named in the start properties
};

// A family of broker settings outside BrokerConfig (group.*, transaction.*,
// log.cleaner.*, ...). Registering it (HR_REGISTER_CONFIG_FAMILY in the
// family's .cc) is all it takes for DescribeConfigs, `headrace config docs`
// and dynamic broker configs to know its keys.
struct ConfigFamily {
  std::string name;
  // Every key with its value given the start properties `props` (keys of
  // other families are ignored). Errors: a bad value, as the family's Set.
  std::function<Result<std::vector<FamilySetting>>(const std::map<std::string, std::string>&)>
      describe;
  // Validates one key/value (NotFound: not a key of this family).
  std::function<Status(const std::string& key, const std::string& value)> validate;
};

inline std::vector<ConfigFamily>& ConfigFamilyRegistry() {
  static std::vector<ConfigFamily> families;
  return families;
}
inline bool RegisterConfigFamily(ConfigFamily family) {
  ConfigFamilyRegistry().push_back(std::move(family));
  return true;
}

// The family of a table `keys()` of Config.
template <typename Config>
ConfigFamily TableFamily(const char* name, const std::vector<ConfigKey<Config>>& (*keys)()) {
  ConfigFamily f;
  f.name = name;
  f.describe = [keys](const std::map<std::string, std::string>& props)
      -> Result<std::vector<FamilySetting>> {
    Config c;
    const Config defaults;
    std::vector<FamilySetting> out;
    for (const ConfigKey<Config>& k : keys()) {
      auto it = props.find(k.name);
      if (it != props.end()) HR_RETURN_IF_ERROR(k.set(c, it->second));
    }
    for (const ConfigKey<Config>& k : keys()) {
      out.push_back({k.name, k.get(c), k.get(defaults), k.doc, k.type, k.mode, k.valid,
                     props.count(k.name) > 0});
    }
    return out;
  };
  f.validate = [keys](const std::string& key, const std::string& value) -> Status {
    Config scratch;
    return SetFromTable(keys(), scratch, key, value, "");
  };
  return f;
}

#define HR_CONFIG_CONCAT2(a, b) a##b
#define HR_CONFIG_CONCAT(a, b) HR_CONFIG_CONCAT2(a, b)
// Registers a family at static initialisation (one line in its .cc).
#define HR_REGISTER_CONFIG_FAMILY(CONFIG, NAME, KEYS_FN)                               \
  [[maybe_unused]] static const bool HR_CONFIG_CONCAT(kFamilyRegistered_, __LINE__) = \
      ::headrace::broker::RegisterConfigFamily(                                        \
          ::headrace::broker::TableFamily<CONFIG>(NAME, KEYS_FN))

}  // namespace headrace::broker
