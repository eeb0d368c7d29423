// Settings of the group coordinator (Kafka's group.* and offsets.* broker
// properties). docs/consumer-groups.md is the reference.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "broker/config/config_table.h"
#include "headrace/status.h"

namespace headrace::broker::group {

struct GroupConfig {
  int32_t min_session_timeout_ms = 6000;      // group.min.session.timeout.ms
  int32_t max_session_timeout_ms = 1800000;   // group.max.session.timeout.ms
  // group.initial.rebalance.delay.ms: how long the first rebalance of an
  // empty group waits for more members (capped by the rebalance timeout).
  int32_t initial_rebalance_delay_ms = 3000;
  int32_t max_size = 0x7fffffff;              // group.max.size
  int64_t offsets_retention_ms = 7LL * 24 * 3600 * 1000;  // offsets.retention.minutes
  int64_t offsets_retention_check_interval_ms = 600000;   // offsets.retention.check.interval.ms
  int32_t offset_metadata_max_bytes = 4096;   // offset.metadata.max.bytes
  // headrace.offsets.commit.fsync: an OffsetCommit (and group metadata
  // change) is answered only after the coordinator's log is fsynced.
  // false = answered once appended.
  bool commit_fsync = true;
  // headrace.group.timer.interval.ms: how often the coordinator checks
  // session, rebalance and pending-member deadlines.
  int32_t timer_interval_ms = 100;
  // offsets.topic.segment.bytes: segment size of the coordinator's log. It is
  // also the compaction step: the log is compacted (rewritten as its live
  // records) once this many bytes, or the live state's size if larger, were
  // appended since the last compaction.
  int64_t log_segment_bytes = 104857600;
  // Cluster mode (docs/cluster.md): the replicated __consumer_offsets topic
  // holds the coordinator's log. offsets.topic.replication.factor: its
  // replicas (fewer when fewer brokers are live at creation).
  // offsets.topic.num.partitions: its partitions, fixed when the topic is
  // first created (a later value does not repartition it, as Kafka); a
  // group's coordinator is the leader of group_partition.h's partition.
  int32_t offsets_topic_replication_factor = 3;
  int32_t offsets_topic_num_partitions = 50;
  // __share_group_state in a cluster (share coordinators, KIP-932): Kafka's
  // share.coordinator.state.topic.* keys and defaults.
  int32_t share_state_topic_replication_factor = 3;
  int32_t share_state_topic_num_partitions = 50;
  int32_t share_state_topic_min_isr = 2;

  // KIP-848 consumer groups (ConsumerGroupHeartbeat). The session timeout
  // and heartbeat interval are the broker's, not the member's.
  int32_t consumer_session_timeout_ms = 45000;        // group.consumer.session.timeout.ms
  int32_t consumer_min_session_timeout_ms = 45000;    // group.consumer.min.session.timeout.ms
  int32_t consumer_max_session_timeout_ms = 60000;    // group.consumer.max.session.timeout.ms
  int32_t consumer_heartbeat_interval_ms = 5000;      // group.consumer.heartbeat.interval.ms
  int32_t consumer_min_heartbeat_interval_ms = 5000;  // group.consumer.min.heartbeat.interval.ms
  int32_t consumer_max_heartbeat_interval_ms = 15000; // group.consumer.max.heartbeat.interval.ms
  int32_t consumer_max_size = 0x7fffffff;             // group.consumer.max.size
  // group.consumer.assignors: server-side assignors by short name
  // ("uniform", "range"); the first is the default.
  std::vector<std::string> consumer_assignors = {"uniform", "range"};

  // KIP-932 share groups (ShareGroupHeartbeat): the broker's session
  // timeout, heartbeat interval and size limit (Kafka 4.2's defaults).
  int32_t share_session_timeout_ms = 45000;    // group.share.session.timeout.ms
  int32_t share_heartbeat_interval_ms = 5000;  // group.share.heartbeat.interval.ms
  int32_t share_max_size = 200;                // group.share.max.size
  // The range a group's share.session.timeout.ms / share.heartbeat.interval.ms
  // / share.record.lock.duration.ms (group configs, group_resource_config.h)
  // must fall in (Kafka 4.2's defaults).
  int32_t share_min_session_timeout_ms = 45000;      // group.share.min.session.timeout.ms
  int32_t share_max_session_timeout_ms = 60000;      // group.share.max.session.timeout.ms
  int32_t share_min_heartbeat_interval_ms = 5000;    // group.share.min.heartbeat.interval.ms
  int32_t share_max_heartbeat_interval_ms = 15000;   // group.share.max.heartbeat.interval.ms
  int32_t share_min_record_lock_duration_ms = 15000; // group.share.min.record.lock.duration.ms
  int32_t share_max_record_lock_duration_ms = 60000; // group.share.max.record.lock.duration.ms
  // KIP-932 share-partitions (ShareFetch/ShareAcknowledge on a partition's
  // leader; broker/share): how long an acquired record stays locked to its
  // member, how often a record is delivered before it is archived, how many
  // records a share-partition has in flight, how many share sessions this
  // broker keeps (Kafka 4.2's defaults).
  int32_t share_record_lock_duration_ms = 30000;  // group.share.record.lock.duration.ms
  int32_t share_delivery_count_limit = 5;         // group.share.delivery.count.limit
  int32_t share_partition_max_record_locks = 2000;  // group.share.partition.max.record.locks
  int32_t share_max_share_sessions = 2000;        // group.share.max.share.sessions

  // Sets one property. NotFound for a key that is not a group setting;
  // InvalidArgument naming the key for a bad value.
  Status Set(const std::string& key, const std::string& value);
  // Every key Set accepts, with its value in this config (as Set takes it)
  // and a one-line doc, in a fixed order.
  using Setting = SettingDoc;
  std::vector<Setting> Describe() const;
  // Moves every group setting out of `props` into this config (so the rest
  // can go to BrokerConfig). Errors as Set.
  Status Extract(std::map<std::string, std::string>& props);
};

}  // namespace headrace::broker::group
