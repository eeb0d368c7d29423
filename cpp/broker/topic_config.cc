#include "broker/topic_config.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "broker/kafka_error.h"

namespace headrace::broker {
namespace {

constexpr int64_t kLongMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

Status InvalidValue(std::string_view key, const std::string& rule) {
  return KafkaStatus(KafkaError::kInvalidConfig, std::string(key) + ": " + rule);
}

// Parses an integer for `key` within [min, max] or returns INVALID_CONFIG.
Result<int64_t> ParseFor(std::string_view key, std::string_view v, int64_t min, int64_t max) {
  auto r = ParseConfigInt(v, min, max);
  if (r.ok()) return r;
  std::string rule = max == kLongMax ? "must be an integer >= " + std::to_string(min)
                                     : "must be an integer between " + std::to_string(min) +
                                           " and " + std::to_string(max);
  return InvalidValue(key, rule);
}

// "Never" for flush.* is Long.MAX_VALUE in Kafka and -1 in LogConfig.
int64_t FromKafkaNever(int64_t v) { return v == kLongMax ? -1 : v; }
std::string ToKafkaNever(int64_t v) { return std::to_string(v < 0 ? kLongMax : v); }

Result<std::vector<std::string>> ParsePolicyList(std::string_view key, std::string_view v) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= v.size()) {
    size_t comma = v.find(',', start);
    if (comma == std::string_view::npos) comma = v.size();
    std::string item(Trim(v.substr(start, comma - start)));
    if (item != "delete" && item != "compact") {
      return InvalidValue(key, "must be a non-empty list of \"delete\" and/or \"compact\"");
    }
    if (std::find(items.begin(), items.end(), item) == items.end()) items.push_back(item);
    start = comma + 1;
  }
  return items;
}

// compression.type: "producer" = keep as sent (nullopt).
Result<std::optional<Compression>> ParseCompressionType(std::string_view v) {
  if (v == "producer") return std::optional<Compression>();
  if (v == "uncompressed") return std::optional<Compression>(Compression::kNone);
  if (v == "gzip") return std::optional<Compression>(Compression::kGzip);
  if (v == "snappy") return std::optional<Compression>(Compression::kSnappy);
  if (v == "lz4") return std::optional<Compression>(Compression::kLz4);
  if (v == "zstd") return std::optional<Compression>(Compression::kZstd);
  return InvalidValue("compression.type",
                      "must be one of uncompressed, zstd, lz4, snappy, gzip, producer");
}

std::string FormatCompressionType(const std::optional<Compression>& c) {
  if (!c) return "producer";
  switch (*c) {
    case Compression::kNone: return "uncompressed";
    case Compression::kGzip: return "gzip";
    case Compression::kSnappy: return "snappy";
    case Compression::kLz4: return "lz4";
    case Compression::kZstd: return "zstd";
  }
  return "producer";
}

struct KeySpec {
  const char* name;
  const char* broker_name;
  ConfigType type;
  const char* doc;
  Status (*apply)(std::string_view value, TopicSettings& s);
  std::string (*format)(const TopicSettings& s);
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
       }},
      {"compression.type", "compression.type", ConfigType::kString,
       "Codec of stored batches: producer keeps each batch as sent; uncompressed, gzip, snappy, "
       "lz4 or zstd re-encode batches of another codec on append.",
       [](std::string_view v, TopicSettings& s) -> Status {
         HR_ASSIGN_OR_RETURN(s.log.compression_target, ParseCompressionType(Trim(v)));
         return Status::OK();
       },
       [](const TopicSettings& s) -> std::string {
         return FormatCompressionType(s.log.compression_target);
       }},
      {"flush.messages", "log.flush.interval.messages", ConfigType::kLong,
       "fsync the log after this many records (9223372036854775807 = never by count).",
       HR_INT_KEY("flush.messages", 1, kLongMax, s.log.flush_interval_messages = FromKafkaNever(x),
                  ToKafkaNever(s.log.flush_interval_messages))},
      {"flush.ms", "log.flush.interval.ms", ConfigType::kLong,
       "fsync the log when this many ms passed since the last fsync (9223372036854775807 = never by time).",
       HR_INT_KEY("flush.ms", 0, kLongMax, s.log.flush_interval_ms = FromKafkaNever(x),
                  ToKafkaNever(s.log.flush_interval_ms))},
      {"index.interval.bytes", "log.index.interval.bytes", ConfigType::kInt,
       "Bytes of log between two offset index entries.",
       HR_INT_KEY("index.interval.bytes", 0, kIntMax,
                  s.log.index_interval_bytes = static_cast<int32_t>(x),
                  std::to_string(s.log.index_interval_bytes))},
      {"max.message.bytes", "message.max.bytes", ConfigType::kInt,
       "Largest record batch the topic accepts, in bytes.",
       HR_INT_KEY("max.message.bytes", 0, kIntMax, s.log.max_message_bytes = static_cast<int32_t>(x),
                  std::to_string(s.log.max_message_bytes))},
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
       }},
      {"message.timestamp.after.max.ms", "log.message.timestamp.after.max.ms", ConfigType::kLong,
       "Largest allowed amount a CreateTime record's timestamp may be ahead of the broker's clock "
       "(INVALID_TIMESTAMP otherwise).",
       HR_INT_KEY("message.timestamp.after.max.ms", 0, kLongMax,
                  s.log.timestamp_after_max_ms = x, std::to_string(s.log.timestamp_after_max_ms))},
      {"message.timestamp.before.max.ms", "log.message.timestamp.before.max.ms", ConfigType::kLong,
       "Largest allowed amount a CreateTime record's timestamp may be behind the broker's clock "
       "(INVALID_TIMESTAMP otherwise).",
       HR_INT_KEY("message.timestamp.before.max.ms", 0, kLongMax,
                  s.log.timestamp_before_max_ms = x, std::to_string(s.log.timestamp_before_max_ms))},
      {"message.timestamp.difference.max.ms", "log.message.timestamp.difference.max.ms",
       ConfigType::kLong,
       "Deprecated: the bound used for message.timestamp.before.max.ms and after.max.ms where "
       "they are left at their default.",
       HR_INT_KEY("message.timestamp.difference.max.ms", 0, kLongMax,
                  s.log.timestamp_difference_max_ms = x,
                  std::to_string(s.log.timestamp_difference_max_ms))},
      {"min.insync.replicas", "min.insync.replicas", ConfigType::kInt,
       "Fewest in-sync replicas for an acks=all produce to succeed.",
       HR_INT_KEY("min.insync.replicas", 1, kIntMax, s.min_insync_replicas = static_cast<int32_t>(x),
                  std::to_string(s.min_insync_replicas))},
      {"retention.bytes", "log.retention.bytes", ConfigType::kLong,
       "Largest size of a partition before old segments are deleted (-1 = no limit).",
       HR_INT_KEY("retention.bytes", -1, kLongMax, s.log.retention_bytes = x,
                  std::to_string(s.log.retention_bytes))},
      {"retention.ms", "log.retention.ms", ConfigType::kLong,
       "Age after which old segments are deleted (-1 = keep forever).",
       HR_INT_KEY("retention.ms", -1, kLongMax, s.log.retention_ms = x,
                  std::to_string(s.log.retention_ms))},
      {"segment.bytes", "log.segment.bytes", ConfigType::kInt,
       "Size at which a new segment file is rolled.",
       HR_INT_KEY("segment.bytes", 14, kIntMax, s.log.segment_bytes = x,
                  std::to_string(s.log.segment_bytes))},
      {"segment.index.bytes", "log.index.size.max.bytes", ConfigType::kInt,
       "Size of each segment's offset index file.",
       HR_INT_KEY("segment.index.bytes", 4, kIntMax, s.log.max_index_bytes = static_cast<int32_t>(x),
                  std::to_string(s.log.max_index_bytes))},
      {"segment.ms", "log.roll.ms", ConfigType::kLong,
       "Age at which a new segment file is rolled even if not full.",
       HR_INT_KEY("segment.ms", 1, kLongMax, s.log.segment_ms = x,
                  std::to_string(s.log.segment_ms))},
      // ---- log compaction (docs/compaction.md); unset = the broker's log.cleaner.* value ----
      {"delete.retention.ms", "log.cleaner.delete.retention.ms", ConfigType::kLong,
       "How long tombstones (and transaction markers) are kept after their segment was cleaned.",
       HR_INT_KEY("delete.retention.ms", 0, kLongMax, s.delete_retention_ms = x,
                  std::to_string(s.delete_retention_ms.value_or(86400000)))},
      {"max.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms", ConfigType::kLong,
       "Longest time a record stays uncompacted: older dirty data is cleaned whatever the ratio.",
       HR_INT_KEY("max.compaction.lag.ms", 1, kLongMax, s.max_compaction_lag_ms = x,
                  std::to_string(s.max_compaction_lag_ms.value_or(kLongMax)))},
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
       }},
      {"min.compaction.lag.ms", "log.cleaner.min.compaction.lag.ms", ConfigType::kLong,
       "Shortest time a record stays uncompacted.",
       HR_INT_KEY("min.compaction.lag.ms", 0, kLongMax, s.min_compaction_lag_ms = x,
                  std::to_string(s.min_compaction_lag_ms.value_or(0)))},
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
  if (k->type == ConfigType::kList) {  // keep the user's order of items
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

std::vector<ConfigEntry> DescribeTopicConfigs(const TopicDefaults& defaults,
                                              const ConfigMap& overrides) {
  auto applied = ApplyTopicConfigs(defaults, overrides);
  TopicSettings effective = applied.ok() ? applied.value() : defaults.settings;
  static const TopicSettings kBuiltIn;
  std::vector<ConfigEntry> out;
  for (const std::string& name : SupportedTopicConfigKeys()) {
    const KeySpec& k = *FindSpec(name);
    ConfigEntry e;
    e.name = name;
    e.value = k.format(effective);
    e.type = k.type;
    e.documentation = k.doc;
    auto ov = overrides.find(name);
    bool is_static = defaults.static_keys.count(name) > 0;
    if (ov != overrides.end()) {
      e.source = ConfigSource::kDynamicTopicConfig;
      e.synonyms.push_back({name, e.value, ConfigSource::kDynamicTopicConfig});
    } else {
      e.source = is_static ? ConfigSource::kStaticBrokerConfig : ConfigSource::kDefaultConfig;
    }
    if (is_static) {
      e.synonyms.push_back(
          {k.broker_name, k.format(defaults.settings), ConfigSource::kStaticBrokerConfig});
    }
    e.synonyms.push_back({k.broker_name, k.format(kBuiltIn), ConfigSource::kDefaultConfig});
    e.is_default = e.source == ConfigSource::kDefaultConfig;
    out.push_back(std::move(e));
  }
  return out;
}

namespace {

// APPEND/SUBTRACT on a list key, starting from the current effective value.
Result<std::string> AlterList(const KeySpec& k, const std::string& current,
                              const std::string& operand, AlterConfigOp op) {
  HR_ASSIGN_OR_RETURN(auto items, ParsePolicyList(k.name, current));
  HR_ASSIGN_OR_RETURN(auto change, ParsePolicyList(k.name, operand));
  for (const auto& c : change) {
    auto it = std::find(items.begin(), items.end(), c);
    if (op == AlterConfigOp::kAppend && it == items.end()) items.push_back(c);
    if (op == AlterConfigOp::kSubtract && it != items.end()) items.erase(it);
  }
  if (items.empty()) {
    return InvalidValue(k.name, "must be a non-empty list of \"delete\" and/or \"compact\"");
  }
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ",") + i;
  return out;
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
