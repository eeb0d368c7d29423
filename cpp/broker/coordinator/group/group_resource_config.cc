#include "broker/coordinator/group/group_resource_config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <cmath>
#include <optional>

#include "broker/base/kafka_error.h"

namespace headrace::broker::group {
namespace {

constexpr int64_t kI32Max = 0x7fffffff;

// One group-config key: its broker synonym (the group.* key whose value it
// overrides), its bounds as broker keys, and how to read the broker's value.
struct GroupKeyInfo {
  const char* name;
  ConfigType type;
  const char* synonym;  // the broker key giving the default
  const char* doc;
  int32_t GroupConfig::*value = nullptr;    // int keys: the broker's default
  int32_t GroupConfig::*min = nullptr;      // null: `fixed_min`
  int32_t GroupConfig::*max = nullptr;      // null: `fixed_max`
  const char* min_key = nullptr;
  const char* max_key = nullptr;
  int64_t fixed_min = 1;
  int64_t fixed_max = kI32Max;
};

const std::vector<GroupKeyInfo>& Table() {
  static const std::vector<GroupKeyInfo> table = {
      {"consumer.heartbeat.interval.ms", ConfigType::kInt, "group.consumer.heartbeat.interval.ms",
       "Heartbeat interval told to the group's consumer-protocol (KIP-848) members.",
       &GroupConfig::consumer_heartbeat_interval_ms, &GroupConfig::consumer_min_heartbeat_interval_ms,
       &GroupConfig::consumer_max_heartbeat_interval_ms, "group.consumer.min.heartbeat.interval.ms",
       "group.consumer.max.heartbeat.interval.ms"},
      {"consumer.session.timeout.ms", ConfigType::kInt, "group.consumer.session.timeout.ms",
       "Session timeout of the group's consumer-protocol (KIP-848) members.",
       &GroupConfig::consumer_session_timeout_ms, &GroupConfig::consumer_min_session_timeout_ms,
       &GroupConfig::consumer_max_session_timeout_ms, "group.consumer.min.session.timeout.ms",
       "group.consumer.max.session.timeout.ms"},
      {"share.auto.offset.reset", ConfigType::kString, "",
       "Where a new share-partition of the group starts: latest, earliest or "
       "by_duration:<ISO-8601 duration>."},
      {"share.delivery.count.limit", ConfigType::kInt, "group.share.delivery.count.limit",
       "Deliveries of a record after which it is archived, not redelivered.",
       &GroupConfig::share_delivery_count_limit, nullptr, nullptr, nullptr, nullptr, 2, 10},
      {"share.heartbeat.interval.ms", ConfigType::kInt, "group.share.heartbeat.interval.ms",
       "Heartbeat interval told to the share group's members.",
       &GroupConfig::share_heartbeat_interval_ms, &GroupConfig::share_min_heartbeat_interval_ms,
       &GroupConfig::share_max_heartbeat_interval_ms, "group.share.min.heartbeat.interval.ms",
       "group.share.max.heartbeat.interval.ms"},
      {"share.isolation.level", ConfigType::kString, "",
       "Which records share consumers of the group see: read_uncommitted (every "
       "record up to the high watermark) or read_committed (up to the last stable "
       "offset, aborted transactions never delivered)."},
      {"share.partition.max.record.locks", ConfigType::kInt,
       "group.share.partition.max.record.locks",
       "Most records of one of the group's share-partitions in flight.",
       &GroupConfig::share_partition_max_record_locks, nullptr, nullptr, nullptr, nullptr, 100,
       10000},
      {"share.record.lock.duration.ms", ConfigType::kInt, "group.share.record.lock.duration.ms",
       "How long a member holds a record it acquired before it is delivered again.",
       &GroupConfig::share_record_lock_duration_ms, &GroupConfig::share_min_record_lock_duration_ms,
       &GroupConfig::share_max_record_lock_duration_ms, "group.share.min.record.lock.duration.ms",
       "group.share.max.record.lock.duration.ms", 1000},
      {"share.session.timeout.ms", ConfigType::kInt, "group.share.session.timeout.ms",
       "Session timeout of the share group's members.", &GroupConfig::share_session_timeout_ms,
       &GroupConfig::share_min_session_timeout_ms, &GroupConfig::share_max_session_timeout_ms,
       "group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"},
  };
  return table;
}

const GroupKeyInfo* Find(const std::string& key) {
  for (const GroupKeyInfo& k : Table())
    if (key == k.name) return &k;
  return nullptr;
}

Status Invalid(const std::string& message) {
  return KafkaStatus(KafkaError::kInvalidConfig, message);
}

std::optional<int64_t> ParseInt(const std::string& v) {
  int64_t out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || p != v.data() + v.size()) return std::nullopt;
  return out;
}

Status CheckValue(const GroupKeyInfo& k, const std::string& value, const GroupConfig& broker) {
  const std::string name = k.name;
  if (name == "share.auto.offset.reset") {
    auto parsed = ParseShareAutoOffsetReset(value);
    if (!parsed.ok()) return Invalid(parsed.status().message());
    return Status::OK();
  }
  if (name == "share.isolation.level") {
    if (value == "read_uncommitted" || value == "read_committed") return Status::OK();
    return Invalid("Invalid value " + value +
                   " for configuration share.isolation.level: String must be one of: "
                   "read_committed, read_uncommitted");
  }
  std::optional<int64_t> v = ParseInt(value);
  if (!v || *v < INT32_MIN || *v > kI32Max) {
    return Invalid("Invalid value " + value + " for configuration " + name +
                   ": Not a number of type INT");
  }
  if (*v < k.fixed_min) {
    return Invalid("Invalid value " + value + " for configuration " + name +
                   ": Value must be at least " + std::to_string(k.fixed_min));
  }
  const int64_t lo = k.min ? broker.*k.min : k.fixed_min;
  const int64_t hi = k.max ? broker.*k.max : k.fixed_max;
  if (*v < lo) {
    return Invalid(name + " must be greater than or equal to " +
                   (k.min_key ? std::string(k.min_key) + " (" + std::to_string(lo) + ")"
                              : std::to_string(lo)));
  }
  if (*v > hi) {
    return Invalid(name + " must be less than or equal to " +
                   (k.max_key ? std::string(k.max_key) + " (" + std::to_string(hi) + ")"
                              : std::to_string(hi)));
  }
  return Status::OK();
}

// The group's value of int key `key` clamped to the broker's current
// bounds (they may have changed since it was set), else `fallback`.
int32_t IntOr(const ConfigMap& m, const char* key, int32_t fallback, const GroupConfig& broker) {
  auto it = m.find(key);
  if (it == m.end()) return fallback;
  std::optional<int64_t> v = ParseInt(it->second);
  if (!v || *v <= 0 || *v > kI32Max) return fallback;
  const GroupKeyInfo* k = Find(key);
  if (k == nullptr) return static_cast<int32_t>(*v);
  const int64_t lo = std::max<int64_t>(k->min ? broker.*k->min : k->fixed_min, k->fixed_min);
  const int64_t hi = k->max ? broker.*k->max : k->fixed_max;
  return static_cast<int32_t>(lo <= hi ? std::clamp(*v, lo, hi) : *v);
}

std::string BrokerValueOf(const GroupKeyInfo& k, const GroupConfig& broker) {
  if (k.value) return std::to_string(broker.*k.value);
  if (std::string(k.name) == "share.auto.offset.reset") return "latest";
  return "read_uncommitted";  // share.isolation.level
}

}  // namespace

const std::vector<std::string>& GroupResourceConfigKeys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> out;
    for (const GroupKeyInfo& k : Table()) out.push_back(k.name);
    std::sort(out.begin(), out.end());
    return out;
  }();
  return keys;
}

Status CheckGroupResourceConfigs(const ConfigMap& overrides, const GroupConfig& broker) {
  for (const auto& [key, value] : overrides) {
    const GroupKeyInfo* k = Find(key);
    if (k == nullptr) return Invalid("Unknown group config name: " + key);
    HR_RETURN_IF_ERROR(CheckValue(*k, value, broker));
  }
  const EffectiveGroupSettings e = EffectiveSettingsOf(overrides, broker);
  if (e.consumer_session_timeout_ms <= e.consumer_heartbeat_interval_ms) {
    return Invalid("consumer.session.timeout.ms must be greater than "
                   "consumer.heartbeat.interval.ms");
  }
  if (e.share_session_timeout_ms <= e.share_heartbeat_interval_ms) {
    return Invalid("share.session.timeout.ms must be greater than share.heartbeat.interval.ms");
  }
  return Status::OK();
}

std::vector<ConfigEntry> DescribeGroupResourceConfigs(
    const ConfigMap& overrides, const GroupConfig& broker,
    const std::map<std::string, std::string>& start_properties) {
  std::vector<ConfigEntry> out;
  for (const GroupKeyInfo& k : Table()) {
    ConfigEntry e;
    e.name = k.name;
    e.type = k.type;
    e.documentation = k.doc;
    const std::string broker_value = BrokerValueOf(k, broker);
    const bool broker_set = *k.synonym != '\0' && start_properties.count(k.synonym) > 0;
    auto it = overrides.find(k.name);
    if (it != overrides.end()) {
      e.value = it->second;
      e.source = static_cast<ConfigSource>(kDynamicGroupConfigSource);
      e.synonyms.push_back({k.name, it->second, e.source});
    } else {
      e.value = broker_value;
      e.source = broker_set ? ConfigSource::kStaticBrokerConfig : ConfigSource::kDefaultConfig;
      e.is_default = !broker_set;
    }
    if (broker_set) e.synonyms.push_back({k.synonym, broker_value, ConfigSource::kStaticBrokerConfig});
    if (!broker_set) {
      e.synonyms.push_back({*k.synonym ? k.synonym : k.name, broker_value,
                            ConfigSource::kDefaultConfig});
    }
    out.push_back(std::move(e));
  }
  return out;
}

Result<int64_t> ParseIsoDurationMs(const std::string& text) {
  // [+]P[nD][T[nH][nM][n[.f]S]], case-insensitive, as java.time.Duration.
  auto bad = [&] {
    return Status::InvalidArgument("'" + text + "' is not an ISO-8601 duration such as PT1H, "
                                   "P1DT2H or PT30.5S");
  };
  size_t i = 0;
  if (i < text.size() && text[i] == '+') ++i;
  if (i < text.size() && text[i] == '-') {
    return Status::InvalidArgument("'" + text + "': the duration must not be negative");
  }
  if (i >= text.size() || (text[i] != 'P' && text[i] != 'p')) return bad();
  ++i;
  double ms = 0;
  bool in_time = false, any = false;
  while (i < text.size()) {
    if (text[i] == 'T' || text[i] == 't') {
      if (in_time) return bad();
      in_time = true;
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && (std::isdigit(static_cast<unsigned char>(text[j])) || text[j] == '.'))
      ++j;
    if (j == i || j >= text.size()) return bad();
    const std::string number = text.substr(i, j - i);
    char* end = nullptr;
    const double n = std::strtod(number.c_str(), &end);
    if (end != number.c_str() + number.size()) return bad();
    const char unit = static_cast<char>(std::toupper(static_cast<unsigned char>(text[j])));
    const bool fraction = number.find('.') != std::string::npos;
    if (!in_time && unit == 'D' && !fraction) ms += n * 86400000.0;
    else if (in_time && unit == 'H' && !fraction) ms += n * 3600000.0;
    else if (in_time && unit == 'M' && !fraction) ms += n * 60000.0;
    else if (in_time && unit == 'S') ms += n * 1000.0;
    else return bad();
    any = true;
    i = j + 1;
  }
  if (!any || ms > 9.2e18) return bad();
  return static_cast<int64_t>(std::llround(ms));
}

Result<ShareAutoOffsetReset> ParseShareAutoOffsetReset(const std::string& value) {
  ShareAutoOffsetReset r;
  if (value == "latest") return r;
  if (value == "earliest") {
    r.kind = ShareAutoOffsetReset::Kind::kEarliest;
    return r;
  }
  const std::string prefix = "by_duration:";
  if (value.rfind(prefix, 0) == 0) {
    auto ms = ParseIsoDurationMs(value.substr(prefix.size()));
    if (!ms.ok()) {
      return Status::InvalidArgument("Invalid value " + value +
                                     " for configuration share.auto.offset.reset: " +
                                     ms.status().message());
    }
    r.kind = ShareAutoOffsetReset::Kind::kByDuration;
    r.duration_ms = *ms;
    return r;
  }
  return Status::InvalidArgument("Invalid value " + value +
                                 " for configuration share.auto.offset.reset: must be one of "
                                 "latest, earliest, by_duration:<ISO-8601 duration>");
}

EffectiveGroupSettings EffectiveSettingsOf(const ConfigMap& overrides, const GroupConfig& broker) {
  EffectiveGroupSettings e{};
  e.consumer_session_timeout_ms =
      IntOr(overrides, "consumer.session.timeout.ms", broker.consumer_session_timeout_ms, broker);
  e.consumer_heartbeat_interval_ms =
      IntOr(overrides, "consumer.heartbeat.interval.ms", broker.consumer_heartbeat_interval_ms, broker);
  e.share_session_timeout_ms =
      IntOr(overrides, "share.session.timeout.ms", broker.share_session_timeout_ms, broker);
  e.share_heartbeat_interval_ms =
      IntOr(overrides, "share.heartbeat.interval.ms", broker.share_heartbeat_interval_ms, broker);
  e.share_record_lock_duration_ms =
      IntOr(overrides, "share.record.lock.duration.ms", broker.share_record_lock_duration_ms, broker);
  e.share_delivery_count_limit =
      IntOr(overrides, "share.delivery.count.limit", broker.share_delivery_count_limit, broker);
  e.share_partition_max_record_locks = IntOr(overrides, "share.partition.max.record.locks", broker.share_partition_max_record_locks, broker);
  if (auto it = overrides.find("share.isolation.level"); it != overrides.end()) {
    e.share_read_committed = it->second == "read_committed";
  }
  if (auto it = overrides.find("share.auto.offset.reset"); it != overrides.end()) {
    if (auto parsed = ParseShareAutoOffsetReset(it->second); parsed.ok()) {
      e.share_auto_offset_reset = *parsed;
    }
  }
  return e;
}

}  // namespace headrace::broker::group
