// The value syntaxes of topic keys, apart from the key table that uses them
// (topic_config.cc): integers in a range, cleanup.policy lists,
// compression.type, compression.gzip.level, the throttled-replica lists and
// message.format.version. Each parser returns the value normalised, or
// INVALID_CONFIG naming the key and the rule. Internal to the config room.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "headrace/log.h"
#include "headrace/status.h"

namespace headrace::broker::topic_values {

inline constexpr int64_t kLongMax = std::numeric_limits<int64_t>::max();
inline constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();

// `s` without leading and trailing blanks (spaces, tabs).
std::string_view Trim(std::string_view s);
// INVALID_CONFIG "<key>: <rule>".
Status InvalidValue(std::string_view key, const std::string& rule);
// Parses an integer for `key` within [min, max] or returns INVALID_CONFIG.
Result<int64_t> ParseFor(std::string_view key, std::string_view v, int64_t min, int64_t max);
// cleanup.policy: a non-empty list of "delete" and/or "compact", duplicates dropped.
Result<std::vector<std::string>> ParsePolicyList(std::string_view key, std::string_view v);
// compression.type: "producer" = keep as sent (nullopt).
Result<std::optional<Compression>> ParseCompressionType(std::string_view v);
std::string FormatCompressionType(const std::optional<Compression>& c);
// compression.gzip.level: -1 (the codec's default) or 1..9.
Result<std::string> GzipLevel(std::string_view v);
// follower/leader.replication.throttled.replicas: "", "*" or a list of
// <partition>:<broker> pairs.
std::function<Result<std::string>(std::string_view)> ThrottledReplicas(const char* name);
// message.format.version: a Kafka release or inter-broker protocol version.
Result<std::string> MessageFormatVersion(std::string_view v);

}  // namespace headrace::broker::topic_values
