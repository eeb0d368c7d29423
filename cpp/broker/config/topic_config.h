// Topic-level configuration: the keys a topic may override (CreateTopics,
// AlterConfigs, IncrementalAlterConfigs), their validation, how overrides
// combine with the broker's defaults into a LogConfig, and what
// DescribeConfigs reports for each key. docs/configuration.md lists them.
//
// Overrides are kept as the strings the client sent (normalised), because
// that is what is persisted and what DescribeConfigs echoes back.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "broker/config/config_table.h"
#include "headrace/log.h"
#include "headrace/status.h"

namespace headrace::broker {

// Topic key -> value, e.g. {"retention.ms": "86400000"}.
using ConfigMap = std::map<std::string, std::string>;

// Everything a topic's configuration decides.
struct TopicSettings {
  LogConfig log;
  bool cleanup_delete = true;    // cleanup.policy contains "delete"
  bool cleanup_compact = false;  // cleanup.policy contains "compact" (the log cleaner)
  int32_t min_insync_replicas = 1;
  // Keys kept as their normalised strings, by topic key: those headrace
  // accepts, stores and describes but does not act on
  // (TopicConfigKeyInfo::effective == false), and a few whose user reads
  // the string (the *.replication.throttled.replicas lists). A key absent
  // here has its built-in default.
  ConfigMap passive;
  // Log compaction (docs/compaction.md). nullopt = not set on the topic:
  // the broker's log.cleaner.* default applies (cleaner_config.h).
  std::optional<double> min_cleanable_dirty_ratio;  // min.cleanable.dirty.ratio
  std::optional<int64_t> delete_retention_ms;       // delete.retention.ms
  std::optional<int64_t> min_compaction_lag_ms;     // min.compaction.lag.ms
  std::optional<int64_t> max_compaction_lag_ms;     // max.compaction.lag.ms
};

// What a topic inherits: the broker's settings for new topics, which topic
// keys had their broker synonym set explicitly (server.properties) and the
// dynamic broker layers (AlterConfigs on BROKER resources), which decide the
// source DescribeConfigs reports (see DescribeTopicConfigs).
struct TopicDefaults {
  // Effective: built-in < static (server.properties) < cluster-wide dynamic
  // default < this broker's dynamic value.
  TopicSettings settings;
  std::set<std::string> static_keys;  // topic key names, e.g. "retention.ms"
  // The dynamic layers by topic key ("retention.ms" for log.retention.ms).
  ConfigMap dynamic_default;  // DYNAMIC_DEFAULT_BROKER_CONFIG
  ConfigMap dynamic_broker;   // DYNAMIC_BROKER_CONFIG
  // `settings` without the dynamic layers; unset = `settings`.
  std::optional<TopicSettings> static_settings;
};

// `base` (static defaults, no dynamic layers) with the dynamic layers
// applied. Keys of the layers that are not valid topic keys or values are
// skipped (they were validated when set).
TopicDefaults WithDynamicLayers(TopicDefaults base, const ConfigMap& dynamic_default,
                                const ConfigMap& dynamic_broker);

// The table of topic keys as the docs show it.
struct TopicConfigKeyInfo {
  std::string name;
  std::string broker_name;  // "" = no broker-wide default
  ConfigType type;
  std::string default_value;
  std::string valid;  // valid values / range ("" = any)
  bool effective;     // false: stored and described, no effect in headrace
  std::string doc;
};
const std::vector<TopicConfigKeyInfo>& TopicConfigKeyTable();  // sorted by name

struct ConfigSynonym {
  std::string name;
  std::optional<std::string> value;
  ConfigSource source = ConfigSource::kUnknown;
};

// One row of a DescribeConfigs answer for a topic.
struct ConfigEntry {
  std::string name;
  std::optional<std::string> value;  // null only for sensitive keys
  bool read_only = false;
  bool is_default = false;           // v0 field: source is DEFAULT_CONFIG
  ConfigSource source = ConfigSource::kDefaultConfig;
  bool sensitive = false;
  ConfigType type = ConfigType::kUnknown;
  std::string documentation;
  // Most specific first: the topic override (if any), the broker synonym
  // (if set), the built-in default.
  std::vector<ConfigSynonym> synonyms;
};

// The supported topic keys in sorted order.
const std::vector<std::string>& SupportedTopicConfigKeys();
bool IsSupportedTopicConfigKey(std::string_view key);
// The broker property that sets the default for topic key `key`, e.g.
// "retention.ms" -> "log.retention.ms"; "" for an unknown key.
std::string_view BrokerSynonymOf(std::string_view key);

// Validates one key/value pair. Errors map to INVALID_CONFIG with a message
// naming the key: "retention.ms: must be an integer >= -1",
// "Unknown topic config name: foo".
Status ValidateTopicConfig(std::string_view key, std::string_view value);
// Validates every pair (first error wins).
Status ValidateTopicConfigs(const ConfigMap& configs);
// The canonical stored form of a valid value (trimmed; cleanup.policy
// de-duplicated). REQUIRES: ValidateTopicConfig(key, value) is OK.
std::string NormalizeTopicConfigValue(std::string_view key, std::string_view value);

// The value of topic key `key` in `s`, in the stored form ("" for an
// unknown key).
std::string FormatTopicConfig(const TopicSettings& s, std::string_view key);

// Defaults with `overrides` applied. Errors as ValidateTopicConfig.
Result<TopicSettings> ApplyTopicConfigs(const TopicDefaults& defaults, const ConfigMap& overrides);

// Every supported key with its effective value and source, sorted by name.
// REQUIRES: `overrides` is valid.
std::vector<ConfigEntry> DescribeTopicConfigs(const TopicDefaults& defaults,
                                              const ConfigMap& overrides);

// IncrementalAlterConfigs operations, numbered as on the wire.
enum class AlterConfigOp : int8_t { kSet = 0, kDelete = 1, kAppend = 2, kSubtract = 3 };

struct ConfigAlteration {
  std::string key;
  AlterConfigOp op = AlterConfigOp::kSet;
  std::optional<std::string> value;  // ignored for kDelete
};

// The overrides after applying `ops` in order to `current` (Kafka's
// IncrementalAlterConfigs): SET replaces, DELETE reverts to the default,
// APPEND/SUBTRACT add/remove list items (list keys only: cleanup.policy;
// starting from the effective value). The result is validated and normalised.
// Errors: INVALID_CONFIG (unknown key, bad value), INVALID_REQUEST (APPEND or
// SUBTRACT on a non-list key, null value for SET/APPEND/SUBTRACT).
Result<ConfigMap> ApplyConfigAlterations(const TopicDefaults& defaults, const ConfigMap& current,
                                         const std::vector<ConfigAlteration>& ops);

// Parses a value of the form used by the topic keys; exposed for the
// broker's own properties. Errors: InvalidArgument.
Result<int64_t> ParseConfigInt(std::string_view text, int64_t min, int64_t max);

}  // namespace headrace::broker
