// Group configs: the keys of the GROUP config resource (Kafka's
// ConfigResource.Type.GROUP = 32, its GroupConfig), set per group id through
// IncrementalAlterConfigs / AlterConfigs and read through DescribeConfigs.
// A key a group does not set takes the broker's group.* value.
//
//   consumer.session.timeout.ms     [group.consumer.min/max.session.timeout.ms]
//   consumer.heartbeat.interval.ms  [group.consumer.min/max.heartbeat.interval.ms]
//   share.session.timeout.ms        [group.share.min/max.session.timeout.ms]
//   share.heartbeat.interval.ms     [group.share.min/max.heartbeat.interval.ms]
//   share.record.lock.duration.ms   [group.share.min/max.record.lock.duration.ms]
//   share.delivery.count.limit      [2, 10]
//   share.partition.max.record.locks [100, 10000]
//   share.auto.offset.reset         latest | earliest | by_duration:<ISO-8601 duration>
//   share.isolation.level           read_uncommitted | read_committed
// and, as Kafka, each session timeout must exceed its heartbeat interval
// (the group's effective values). docs/share-groups.md "Group configs".
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "broker/config/topic_config.h"
#include "broker/coordinator/group/group_config.h"
#include "headrace/status.h"

namespace headrace::broker::group {

// DescribeConfigs ConfigSource of a key a group sets (Kafka's
// DYNAMIC_GROUP_CONFIG).
inline constexpr int8_t kDynamicGroupConfigSource = 8;

// The group-config keys, sorted.
const std::vector<std::string>& GroupResourceConfigKeys();

// Kafka's checks of a group's complete set of overrides (`overrides`, key ->
// value) against the broker's `broker` settings. INVALID_CONFIG naming the
// key: "Unknown group config name: foo", "share.session.timeout.ms must be
// less than or equal to group.share.max.session.timeout.ms (60000)", ...
Status CheckGroupResourceConfigs(const ConfigMap& overrides, const GroupConfig& broker);

// Every key with its effective value: the override (source
// DYNAMIC_GROUP_CONFIG), else the broker's value (STATIC_BROKER_CONFIG when
// `start_properties` sets the group.* key, else DEFAULT_CONFIG), with the
// synonyms most specific first. Values of `overrides` are assumed checked.
std::vector<ConfigEntry> DescribeGroupResourceConfigs(
    const ConfigMap& overrides, const GroupConfig& broker,
    const std::map<std::string, std::string>& start_properties);

// share.auto.offset.reset parsed: where a new share-partition starts.
struct ShareAutoOffsetReset {
  enum class Kind { kLatest, kEarliest, kByDuration } kind = Kind::kLatest;
  int64_t duration_ms = 0;  // kByDuration: start at the first record at or after now - this
};
// Errors: InvalidArgument naming the accepted forms.
Result<ShareAutoOffsetReset> ParseShareAutoOffsetReset(const std::string& value);

// Parses an ISO-8601 duration as java.time.Duration.parse does
// ("PT1H", "P1DT2H30M", "PT0.5S"; days, hours, minutes, seconds with an
// optional fraction) into milliseconds. Negative durations are refused.
Result<int64_t> ParseIsoDurationMs(const std::string& text);

// The effective settings of one group: the broker's values with the
// group's overrides applied (values assumed checked; a bad one is ignored).
struct EffectiveGroupSettings {
  int32_t consumer_session_timeout_ms;
  int32_t consumer_heartbeat_interval_ms;
  int32_t share_session_timeout_ms;
  int32_t share_heartbeat_interval_ms;
  int32_t share_record_lock_duration_ms;
  int32_t share_delivery_count_limit;
  int32_t share_partition_max_record_locks;
  ShareAutoOffsetReset share_auto_offset_reset;
  // share.isolation.level=read_committed: share-partitions acquire records
  // up to the last stable offset and archive aborted ones.
  bool share_read_committed = false;
};
EffectiveGroupSettings EffectiveSettingsOf(const ConfigMap& overrides, const GroupConfig& broker);

}  // namespace headrace::broker::group
