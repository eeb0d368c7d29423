// The topic key table: one row per key a topic may override (type, range,
// default, broker synonym, doc, how it is stored and read back) and the
// operations over it (validate, normalise, apply over the broker's defaults,
// describe, incremental alterations). The value syntaxes the rows use are
// in topic_config_values.cc.
#include "broker/config/topic_config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <functional>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "broker/base/kafka_error.h"
#include "broker/config/topic_config_values.h"

namespace headrace::broker {
namespace {

using topic_values::FormatCompressionType;
using topic_values::GzipLevel;
using topic_values::InvalidValue;
using topic_values::kIntMax;
using topic_values::kLongMax;
using topic_values::MessageFormatVersion;
using topic_values::ParseCompressionType;
using topic_values::ParseFor;
using topic_values::ParsePolicyList;
using topic_values::ThrottledReplicas;
using topic_values::Trim;

// "Never" for flush.* is Long.MAX_VALUE in Kafka and -1 in LogConfig.
int64_t FromKafkaNever(int64_t v) { return v == kLongMax ? -1 : v; }
std::string ToKafkaNever(int64_t v) { return std::to_string(v < 0 ? kLongMax : v); }

// One topic key. `apply` validates a value and stores it into the settings;
// `format` reads the settings back in the stored (normalised) form.
struct KeySpec {
  const char* name;
  const char* broker_name;  // "" = no broker-wide default
  ConfigType type;
  const char* doc;
  std::function<Status(std::string_view value, TopicSettings& s)> apply;
  std::function<std::string(const TopicSettings& s)> format;
  const char* valid = "";
  bool effective = true;  // false: stored and described only (docs/configuration.md says why)
};

#define HR_INT_KEY(NAME, MIN, MAX, EXPR_SET, EXPR_GET)                       \
  [](std::string_view v, TopicSettings& s) -> Status {                      \
    auto r = ParseFor(NAME, v, MIN, MAX);                                   \
    if (!r.ok()) return r.status();                                         \
    int64_t x = r.value();                                                  \
    EXPR_SET;                                                               \
    return Status::OK();                                                    \
  },                                                                        \
      [](const TopicSettings& s) -> std::string { return EXPR_GET; }

// The stored value of a passive key, or its default.
std::string PassiveValue(const TopicSettings& s, const char* name, const char* def) {
  auto it = s.passive.find(name);
  return it == s.passive.end() ? std::string(def) : it->second;
}

// A passive key whose value `check` validates and normalises.
KeySpec Passive(const char* name, const char* broker_name, ConfigType type, const char* def,
                const char* valid, const char* doc,
                std::function<Result<std::string>(std::string_view)> check) {
  return KeySpec{name, broker_name, type, doc,
                 [name, check](std::string_view v, TopicSettings& s) -> Status {
                   HR_ASSIGN_OR_RETURN(std::string norm, check(Trim(v)));
                   s.passive[name] = std::move(norm);
                   return Status::OK();
                 },
                 [name, def](const TopicSettings& s) { return PassiveValue(s, name, def); },
                 valid, false};
}

// A key kept in TopicSettings::passive (as Passive) that headrace acts on:
// its consumer reads the stored string (e.g. Partition::SetThrottleSettings).
KeySpec ReadFromPassive(KeySpec k) {
  k.effective = true;
  return k;
}

std::function<Result<std::string>(std::string_view)> IntCheck(const char* name, int64_t min,
                                                              int64_t max) {
  return [=](std::string_view v) -> Result<std::string> {
    HR_ASSIGN_OR_RETURN(int64_t x, ParseFor(name, v, min, max));
    return std::to_string(x);
  };
}

std::function<Result<std::string>(std::string_view)> BoolCheck(const char* name) {
  return [=](std::string_view v) -> Result<std::string> {
    std::string lower(v);
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower == "true" || lower == "false") return lower;
    return InvalidValue(name, "must be true or false");
  };
}

const std::vector<KeySpec>& Specs() {
  static const std::vector<KeySpec> specs = {
      {"cleanup.policy", "log.cleanup.policy", ConfigType::kList,
       "Retention policy for old segments: delete, compact (keep the latest record per key), or both.",
       [](std::string_view v, TopicSettings& s) -> Status {
         HR_ASSIGN_OR_RETURN(auto items, ParsePolicyList("cleanup.policy", v));
         s.cleanup_delete = std::count(items.begin(), items.end(), "delete") > 0;
         s.cleanup_compact = std::count(items.begin(), items.end(), "compact") > 0;
         return Status::OK();
       },
       [](const TopicSettings& s) -> std::string {
         if (s.cleanup_compact && s.cleanup_delete) return "compact,delete";
         return s.cleanup_compact ? "compact" : "delete";
       },
       "[compact, delete]"},
      {"compression.type", "compression.type", ConfigType::kString,
       "Codec of stored batches: producer keeps each batch as sent; uncompressed, gzip, snappy, "
       "lz4 or zstd re-encode batches of another codec on append.",
       [](std::string_view v, TopicSettings& s) -> Status {
         HR_ASSIGN_OR_RETURN(s.log.compression_target, ParseCompressionType(Trim(v)));
         return Status::OK();
       },
       [](const TopicSettings& s) -> std::string {
         return FormatCompressionType(s.log.compression_target);
       },
       "[uncompressed, zstd, lz4, snappy, gzip, producer]"},
      {"flush.messages", "log.flush.interval.messages", ConfigType::kLong,
       "fsync the log after this many records (9223372036854775807 = never by count).",
       HR_INT_KEY("flush.messages", 1, kLongMax, s.log.flush_interval_messages = FromKafkaNever(x),
                  ToKafkaNever(s.log.flush_interval_messages)),
       "[1,...]"},
      {"flush.ms", "log.flush.interval.ms", ConfigType::kLong,
       "fsync the log when this many ms passed since the last fsync (9223372036854775807 = never by time).",
       HR_INT_KEY("flush.ms", 0, kLongMax, s.log.flush_interval_ms = FromKafkaNever(x),
                  ToKafkaNever(s.log.flush_interval_ms)),
       "[0,...]"},
      {"index.interval.bytes", "log.index.interval.bytes", ConfigType::kInt,
       "Bytes of log between two offset index entries.",
       HR_INT_KEY("index.interval.bytes", 0, kIntMax,
                  s.log.index_interval_bytes = static_cast<int32_t>(x),
                  std::to_string(s.log.index_interval_bytes)),
       "[0,...]"},
      {"max.message.bytes", "message.max.bytes", ConfigType::kInt,
       "Largest record batch the topic accepts, in bytes.",
       HR_INT_KEY("max.message.bytes", 0, kIntMax, s.log.max_message_bytes = static_cast<int32_t>(x),
                  std::to_string(s.log.max_message_bytes)),
       "[0,...]"},
      {"message.timestamp.type", "log.message.timestamp.type", ConfigType::kString,
       "CreateTime keeps the producer's timestamps; LogAppendTime stamps batches with the broker's clock.",
       [](std::string_view v, TopicSettings& s) -> Status {
         v = Trim(v);
         if (v == "CreateTime") {
           s.log.timestamp_type = TimestampType::kCreateTime;
         } else if (v == "LogAppendTime") {
           s.log.timestamp_type = TimestampType::kLogAppendTime;
         } else {
           return InvalidValue("message.timestamp.type", "must be CreateTime or LogAppendTime");
         }
         return Status::OK();
       },
       [](const TopicSettings& s) -> std::string {
         return s.log.timestamp_type == TimestampType::kLogAppendTime ? "LogAppendTime"
                                                                      : "CreateTime";
       },
       "[CreateTime, LogAppendTime]"},
      {"message.timestamp.after.max.ms", "log.message.timestamp.after.max.ms", ConfigType::kLong,
       "Largest allowed amount a CreateTime record's timestamp may be ahead of the broker's clock "
       "(INVALID_TIMESTAMP otherwise).",
       HR_INT_KEY("message.timestamp.after.max.ms", 0, kLongMax,
                  s.log.timestamp_after_max_ms = x, std::to_string(s.log.timestamp_after_max_ms)),
       "[0,...]"},
      {"message.timestamp.before.max.ms", "log.message.timestamp.before.max.ms", ConfigType::kLong,
       "Largest allowed amount a CreateTime record's timestamp may be behind the broker's clock "
       "(INVALID_TIMESTAMP otherwise).",
       HR_INT_KEY("message.timestamp.before.max.ms", 0, kLongMax,
                  s.log.timestamp_before_max_ms = x, std::to_string(s.log.timestamp_before_max_ms)),
       "[0,...]"},
      {"message.timestamp.difference.max.ms", "log.message.timestamp.difference.max.ms",
       ConfigType::kLong,
       "Deprecated: the bound used for message.timestamp.before.max.ms and after.max.ms where "
       "they are left at their default.",
       HR_INT_KEY("message.timestamp.difference.max.ms", 0, kLongMax,
                  s.log.timestamp_difference_max_ms = x,
                  std::to_string(s.log.timestamp_difference_max_ms)),
       "[0,...]"},
      {"min.insync.replicas", "min.insync.replicas", ConfigType::kInt,
       "Fewest in-sync replicas for an acks=all produce to succeed.",
       HR_INT_KEY("min.insync.replicas", 1, kIntMax, s.min_insync_replicas = static_cast<int32_t>(x),
                  std::to_string(s.min_insync_replicas)),
       "[1,...]"},
      {"retention.bytes", "log.retention.bytes", ConfigType::kLong,
       "Largest size of a partition before old segments are deleted (-1 = no limit).",
       HR_INT_KEY("retention.bytes", -1, kLongMax, s.log.retention_bytes = x,
                  std::to_string(s.log.retention_bytes)),
       "[-1,...]"},
      {"retention.ms", "log.retention.ms", ConfigType::kLong,
       "Age after which old segments are deleted (-1 = keep forever).",
       HR_INT_KEY("retention.ms", -1, kLongMax, s.log.retention_ms = x,
                  std::to_string(s.log.retention_ms)),
       "[-1,...]"},
      {"segment.bytes", "log.segment.bytes", ConfigType::kInt,
       "Size at which a new segment file is rolled.",
       HR_INT_KEY("segment.bytes", 14, kIntMax, s.log.segment_bytes = x,
                  std::to_string(s.log.segment_bytes)),
       "[14,...]"},
      {"segment.index.bytes", "log.index.size.max.bytes", ConfigType::kInt,
       "Size of each segment's offset index file.",
       HR_INT_KEY("segment.index.bytes", 4, kIntMax, s.log.max_index_bytes = static_cast<int32_t>(x),
                  std::to_string(s.log.max_index_bytes)),
       "[4,...]"},
      {"segment.ms", "log.roll.ms", ConfigType::kLong,
       "Age at which a new segment file is rolled even if not full.",
       HR_INT_KEY("segment.ms", 1, kLongMax, s.log.segment_ms = x,
                  std::to_string(s.log.segment_ms)),
       "[1,...]"},
      // Keys headrace stores and describes without acting on them
      // (docs/configuration.md, "Keys without effect", says why for each).
      Passive("compression.gzip.level", "compression.gzip.level", ConfigType::kInt, "-1",
              "[1,...,9] or -1", "Level of gzip compression when compression.type=gzip.",
              GzipLevel),
      Passive("compression.lz4.level", "compression.lz4.level", ConfigType::kInt, "9",
              "[1,...,17]", "Level of lz4 compression when compression.type=lz4.",
              IntCheck("compression.lz4.level", 1, 17)),
      Passive("compression.zstd.level", "compression.zstd.level", ConfigType::kInt, "3",
              "[-131072,...,22]", "Level of zstd compression when compression.type=zstd.",
              IntCheck("compression.zstd.level", -131072, 22)),
      Passive("file.delete.delay.ms", "log.segment.delete.delay.ms", ConfigType::kLong, "60000",
              "[0,...]", "How long a deleted segment's files are kept before removal.",
              IntCheck("file.delete.delay.ms", 0, kLongMax)),
      ReadFromPassive(Passive(
          "follower.replication.throttled.replicas", "", ConfigType::kList, "",
          "[partitionId]:[brokerId],... or *",
          "Replicas whose follower-side replication is throttled (follower.replication.throttled.rate).",
          ThrottledReplicas("follower.replication.throttled.replicas"))),
      ReadFromPassive(Passive(
          "leader.replication.throttled.replicas", "", ConfigType::kList, "",
          "[partitionId]:[brokerId],... or *",
          "Replicas whose leader-side replication is throttled (leader.replication.throttled.rate).",
          ThrottledReplicas("leader.replication.throttled.replicas"))),
      Passive("local.retention.bytes", "log.local.retention.bytes", ConfigType::kLong, "-2",
              "[-2,...]", "Tiered storage: bytes kept locally (-2 = retention.bytes).",
              IntCheck("local.retention.bytes", -2, kLongMax)),
      Passive("local.retention.ms", "log.local.retention.ms", ConfigType::kLong, "-2", "[-2,...]",
              "Tiered storage: age of data kept locally (-2 = retention.ms).",
              IntCheck("local.retention.ms", -2, kLongMax)),
      Passive("message.downconversion.enable", "log.message.downconversion.enable",
              ConfigType::kBoolean, "true", "",
              "Down-convert batches for fetch requests of old versions.",
              BoolCheck("message.downconversion.enable")),
      Passive("message.format.version", "log.message.format.version", ConfigType::kString,
              "3.0-IV1", "a Kafka version, e.g. 0.10.2, 2.8, 3.0, 3.0-IV1",
              "Deprecated: the record format version of appended batches.", MessageFormatVersion),
      Passive("preallocate", "log.preallocate", ConfigType::kBoolean, "false", "",
              "Preallocate each new segment file.", BoolCheck("preallocate")),
      Passive("remote.log.copy.disable", "", ConfigType::kBoolean, "false", "",
              "Tiered storage: stop copying segments to remote storage.",
              BoolCheck("remote.log.copy.disable")),
      Passive("remote.log.delete.on.disable", "", ConfigType::kBoolean, "false", "",
              "Tiered storage: delete remote data when tiering is turned off.",
              BoolCheck("remote.log.delete.on.disable")),
      Passive("remote.storage.enable", "", ConfigType::kBoolean, "false", "[false]",
              "Tiered storage for the topic; headrace has none, so only false is accepted.",
              [](std::string_view v) -> Result<std::string> {
                HR_ASSIGN_OR_RETURN(std::string b, BoolCheck("remote.storage.enable")(v));
                if (b == "true") {
                  return InvalidValue("remote.storage.enable",
                                      "Tiered Storage functionality is disabled in the broker");
                }
                return b;
              }),
      Passive("segment.jitter.ms", "log.roll.jitter.ms", ConfigType::kLong, "0", "[0,...]",
              "Largest random jitter subtracted from segment.ms.",
              IntCheck("segment.jitter.ms", 0, kLongMax)),
      // Stored like a passive key; the cluster's controller reads a topic's
      // override from /config/topics (docs/cluster.md, election rule 3).
      [] {
        KeySpec k = Passive(
            "unclean.leader.election.enable", "unclean.leader.election.enable",
            ConfigType::kBoolean, "false", "",
            "Elect a replica outside the ISR when no ISR member is alive (may lose data).",
            BoolCheck("unclean.leader.election.enable"));
        k.effective = true;
        return k;
      }(),
      // ---- log compaction (docs/compaction.md); unset = the broker's log.cleaner.* value ----
      {"delete.retention.ms", "log.cleaner.delete.retention.ms", ConfigType::kLong,
       "How long tombstones (and transaction markers) are kept after their segment was cleaned.",
       HR_INT_KEY("delete.retention.ms", 0, kLongMax, s.delete_retention_ms = x,
                  std::to_string(s.delete_retention_ms.value_or(86400000))),
       "[0,...]"},
      {"max.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms", ConfigType::kLong,
       "Longest time a record stays uncompacted: older dirty data is cleaned whatever the ratio.",
       HR_INT_KEY("max.compaction.lag.ms", 1, kLongMax, s.max_compaction_lag_ms = x,
                  std::to_string(s.max_compaction_lag_ms.value_or(kLongMax))),
       "[1,...]"},
      {"min.cleanable.dirty.ratio", "log.cleaner.min.cleanable.ratio", ConfigType::kDouble,
       "Dirty (uncompacted) share of the log above which the cleaner compacts it.",
       [](std::string_view v, TopicSettings& s) -> Status {
         std::string text(Trim(v));
         char* end = nullptr;
         double d = text.empty() ? -1 : std::strtod(text.c_str(), &end);
         if (text.empty() || end != text.c_str() + text.size() || !(d >= 0 && d <= 1))
           return InvalidValue("min.cleanable.dirty.ratio", "must be a number between 0 and 1");
         s.min_cleanable_dirty_ratio = d;
         return Status::OK();
       },
       [](const TopicSettings& s) -> std::string {
         char buf[32];
         std::snprintf(buf, sizeof(buf), "%g", s.min_cleanable_dirty_ratio.value_or(0.5));
         return buf;
       },
       "[0,...,1]"},
      {"min.compaction.lag.ms", "log.cleaner.min.compaction.lag.ms", ConfigType::kLong,
       "Shortest time a record stays uncompacted.",
       HR_INT_KEY("min.compaction.lag.ms", 0, kLongMax, s.min_compaction_lag_ms = x,
                  std::to_string(s.min_compaction_lag_ms.value_or(0))),
       "[0,...]"},
  };
  return specs;
}

#undef HR_INT_KEY

const KeySpec* FindSpec(std::string_view key) {
  for (const KeySpec& k : Specs()) {
    if (key == k.name) return &k;
  }
  return nullptr;
}

Status UnknownKey(std::string_view key) {
  return KafkaStatus(KafkaError::kInvalidConfig, "Unknown topic config name: " + std::string(key));
}

}  // namespace

Result<int64_t> ParseConfigInt(std::string_view text, int64_t min, int64_t max) {
  text = Trim(text);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  int64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || p != text.data() + text.size() || v < min || v > max) {
    return Status::InvalidArgument("not an integer in [" + std::to_string(min) + ", " +
                                   std::to_string(max) + "]: \"" + std::string(text) + "\"");
  }
  return v;
}

const std::vector<std::string>& SupportedTopicConfigKeys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    for (const KeySpec& s : Specs()) k.emplace_back(s.name);
    std::sort(k.begin(), k.end());
    return k;
  }();
  return keys;
}

bool IsSupportedTopicConfigKey(std::string_view key) { return FindSpec(key) != nullptr; }

std::string_view BrokerSynonymOf(std::string_view key) {
  const KeySpec* k = FindSpec(key);
  return k ? k->broker_name : "";
}

std::string FormatTopicConfig(const TopicSettings& s, std::string_view key) {
  const KeySpec* k = FindSpec(key);
  return k ? k->format(s) : "";
}

Status ValidateTopicConfig(std::string_view key, std::string_view value) {
  const KeySpec* k = FindSpec(key);
  if (!k) return UnknownKey(key);
  TopicSettings scratch;
  return k->apply(value, scratch);
}

Status ValidateTopicConfigs(const ConfigMap& configs) {
  for (const auto& [k, v] : configs) HR_RETURN_IF_ERROR(ValidateTopicConfig(k, v));
  return Status::OK();
}

std::string NormalizeTopicConfigValue(std::string_view key, std::string_view value) {
  const KeySpec* k = FindSpec(key);
  if (!k) return std::string(value);
  TopicSettings scratch;
  if (!k->apply(value, scratch).ok()) return std::string(value);
  if (key == "cleanup.policy") {  // keep the user's order of items
    auto items = ParsePolicyList(key, value);
    std::string out;
    for (const auto& i : items.value()) out += (out.empty() ? "" : ",") + i;
    return out;
  }
  return k->format(scratch);
}

Result<TopicSettings> ApplyTopicConfigs(const TopicDefaults& defaults, const ConfigMap& overrides) {
  TopicSettings s = defaults.settings;
  for (const auto& [key, value] : overrides) {
    const KeySpec* k = FindSpec(key);
    if (!k) return UnknownKey(key);
    HR_RETURN_IF_ERROR(k->apply(value, s));
  }
  return s;
}

TopicDefaults WithDynamicLayers(TopicDefaults base, const ConfigMap& dynamic_default,
                                const ConfigMap& dynamic_broker) {
  base.static_settings = base.settings;
  base.dynamic_default.clear();
  base.dynamic_broker.clear();
  for (const ConfigMap* layer : {&dynamic_default, &dynamic_broker}) {
    for (const auto& [key, value] : *layer) {
      const KeySpec* k = FindSpec(key);
      if (!k || !k->apply(value, base.settings).ok()) continue;
      (layer == &dynamic_default ? base.dynamic_default : base.dynamic_broker)[key] =
          NormalizeTopicConfigValue(key, value);
    }
  }
  return base;
}

const std::vector<TopicConfigKeyInfo>& TopicConfigKeyTable() {
  static const std::vector<TopicConfigKeyInfo> table = [] {
    static const TopicSettings kBuiltIn;
    std::vector<TopicConfigKeyInfo> out;
    for (const std::string& name : SupportedTopicConfigKeys()) {
      const KeySpec& k = *FindSpec(name);
      out.push_back({k.name, k.broker_name, k.type, k.format(kBuiltIn), k.valid, k.effective, k.doc});
    }
    return out;
  }();
  return table;
}

std::vector<ConfigEntry> DescribeTopicConfigs(const TopicDefaults& defaults,
                                              const ConfigMap& overrides) {
  auto applied = ApplyTopicConfigs(defaults, overrides);
  TopicSettings effective = applied.ok() ? applied.value() : defaults.settings;
  const TopicSettings& static_settings =
      defaults.static_settings ? *defaults.static_settings : defaults.settings;
  static const TopicSettings kBuiltIn;
  std::vector<ConfigEntry> out;
  for (const std::string& name : SupportedTopicConfigKeys()) {
    const KeySpec& k = *FindSpec(name);
    const std::string broker_name = *k.broker_name ? k.broker_name : name;
    ConfigEntry e;
    e.name = name;
    e.value = k.format(effective);
    e.type = k.type;
    e.documentation = k.doc;
    // Most specific first; the entry's source is the first synonym's.
    if (auto ov = overrides.find(name); ov != overrides.end()) {
      e.synonyms.push_back({name, e.value, ConfigSource::kDynamicTopicConfig});
    }
    if (*k.broker_name) {
      if (auto it = defaults.dynamic_broker.find(name); it != defaults.dynamic_broker.end()) {
        e.synonyms.push_back({broker_name, it->second, ConfigSource::kDynamicBrokerConfig});
      }
      if (auto it = defaults.dynamic_default.find(name); it != defaults.dynamic_default.end()) {
        e.synonyms.push_back({broker_name, it->second, ConfigSource::kDynamicDefaultBrokerConfig});
      }
      if (defaults.static_keys.count(name) > 0) {
        e.synonyms.push_back(
            {broker_name, k.format(static_settings), ConfigSource::kStaticBrokerConfig});
      }
    }
    e.synonyms.push_back({broker_name, k.format(kBuiltIn), ConfigSource::kDefaultConfig});
    e.source = e.synonyms.front().source;
    e.is_default = e.source == ConfigSource::kDefaultConfig;
    out.push_back(std::move(e));
  }
  return out;
}

namespace {

// The items of a comma-separated list, trimmed, empty items dropped.
std::vector<std::string> SplitList(std::string_view v) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= v.size()) {
    size_t comma = v.find(',', start);
    if (comma == std::string_view::npos) comma = v.size();
    std::string item(Trim(v.substr(start, comma - start)));
    if (!item.empty()) items.push_back(std::move(item));
    start = comma + 1;
  }
  return items;
}

// APPEND/SUBTRACT on a list key, starting from the current effective value;
// the result is validated as a SET of it would be.
Result<std::string> AlterList(const KeySpec& k, const std::string& current,
                              const std::string& operand, AlterConfigOp op) {
  std::vector<std::string> items = SplitList(current);
  for (const auto& c : SplitList(operand)) {
    auto it = std::find(items.begin(), items.end(), c);
    if (op == AlterConfigOp::kAppend && it == items.end()) items.push_back(c);
    if (op == AlterConfigOp::kSubtract && it != items.end()) items.erase(it);
  }
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ",") + i;
  TopicSettings scratch;
  HR_RETURN_IF_ERROR(k.apply(out, scratch));
  return NormalizeTopicConfigValue(k.name, out);
}

}  // namespace

Result<ConfigMap> ApplyConfigAlterations(const TopicDefaults& defaults, const ConfigMap& current,
                                         const std::vector<ConfigAlteration>& ops) {
  ConfigMap result = current;
  for (const ConfigAlteration& op : ops) {
    const KeySpec* k = FindSpec(op.key);
    if (!k) return UnknownKey(op.key);
    if (op.op == AlterConfigOp::kDelete) {
      result.erase(op.key);
      continue;
    }
    if (!op.value) {
      return KafkaStatus(KafkaError::kInvalidRequest, op.key + ": a value is required");
    }
    if (op.op == AlterConfigOp::kSet) {
      TopicSettings scratch;
      HR_RETURN_IF_ERROR(k->apply(*op.value, scratch));
      result[op.key] = NormalizeTopicConfigValue(op.key, *op.value);
      continue;
    }
    if (k->type != ConfigType::kList) {
      return KafkaStatus(KafkaError::kInvalidRequest,
                         op.key + ": APPEND and SUBTRACT are only allowed on list configs");
    }
    auto it = result.find(op.key);
    std::string base = it != result.end() ? it->second : k->format(defaults.settings);
    HR_ASSIGN_OR_RETURN(result[op.key], AlterList(*k, base, *op.value, op.op));
  }
  return result;
}

}  // namespace headrace::broker
