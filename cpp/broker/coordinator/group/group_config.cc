#include "broker/coordinator/group/group_config.h"

#include "broker/coordinator/group/consumer_assignors.h"

namespace headrace::broker::group {
namespace {

constexpr int64_t kI32Max = 0x7fffffff;

using GroupKey = ConfigKey<GroupConfig>;

template <typename T>
GroupKey IntKey(const char* name, const char* doc, T GroupConfig::*field, int64_t min,
                int64_t max, int64_t scale = 1) {
  return IntConfigKey(name, doc, field, min, max, scale);
}

const std::vector<GroupKey>& Keys() {
  static const std::vector<GroupKey> keys = {
      IntKey("group.min.session.timeout.ms", "Smallest session timeout a member may ask for.",
             &GroupConfig::min_session_timeout_ms, 1, kI32Max),
      IntKey("group.max.session.timeout.ms", "Largest session timeout a member may ask for.",
             &GroupConfig::max_session_timeout_ms, 1, kI32Max),
      IntKey("group.initial.rebalance.delay.ms",
             "How long the first rebalance of an empty group waits for more members.",
             &GroupConfig::initial_rebalance_delay_ms, 0, kI32Max),
      IntKey("group.max.size", "Most members a consumer group may have.", &GroupConfig::max_size,
             1, kI32Max),
      IntKey("offset.metadata.max.bytes", "Largest metadata string of a committed offset.",
             &GroupConfig::offset_metadata_max_bytes, 0, kI32Max),
      IntKey("headrace.group.timer.interval.ms",
             "How often the coordinator checks session and rebalance deadlines.",
             &GroupConfig::timer_interval_ms, 1, kI32Max),
      IntKey("offsets.topic.segment.bytes",
             "Segment size of the coordinator's log and the bytes appended between compactions.",
             &GroupConfig::log_segment_bytes, 4096, kI32Max),
      IntKey("offsets.topic.replication.factor",
             "Replicas of __consumer_offsets in a cluster (fewer if fewer brokers are live).",
             &GroupConfig::offsets_topic_replication_factor, 1, 32767),
      IntKey("offsets.topic.num.partitions",
             "Partitions of __consumer_offsets in a cluster (a group's coordinator is the leader of "
             "abs(hashCode(group id)) % partitions); fixed when the topic is first created.",
             &GroupConfig::offsets_topic_num_partitions, 1, kI32Max),
      IntKey("share.coordinator.state.topic.replication.factor",
             "Replicas of __share_group_state in a cluster (fewer if fewer brokers are live).",
             &GroupConfig::share_state_topic_replication_factor, 1, 32767),
      IntKey("share.coordinator.state.topic.num.partitions",
             "Partitions of __share_group_state in a cluster (a share-partition's state lives in "
             "abs(hashCode(\"group:topicId:partition\")) % partitions); fixed when the topic is "
             "first created.",
             &GroupConfig::share_state_topic_num_partitions, 1, kI32Max),
      IntKey("share.coordinator.state.topic.min.isr",
             "min.insync.replicas of __share_group_state.",
             &GroupConfig::share_state_topic_min_isr, 1, 32767),
      IntKey("offsets.retention.minutes", "How long committed offsets of an empty group are kept.",
             &GroupConfig::offsets_retention_ms, 1, kI32Max, 60000),
      IntKey("offsets.retention.check.interval.ms",
             "How often expired committed offsets are removed.",
             &GroupConfig::offsets_retention_check_interval_ms, 1, INT64_MAX),
      IntKey("group.consumer.session.timeout.ms",
             "Session timeout of consumer-protocol (KIP-848) members.",
             &GroupConfig::consumer_session_timeout_ms, 1, kI32Max),
      IntKey("group.consumer.min.session.timeout.ms",
             "Smallest allowed group.consumer.session.timeout.ms.",
             &GroupConfig::consumer_min_session_timeout_ms, 1, kI32Max),
      IntKey("group.consumer.max.session.timeout.ms",
             "Largest allowed group.consumer.session.timeout.ms.",
             &GroupConfig::consumer_max_session_timeout_ms, 1, kI32Max),
      IntKey("group.consumer.heartbeat.interval.ms",
             "Heartbeat interval told to consumer-protocol (KIP-848) members.",
             &GroupConfig::consumer_heartbeat_interval_ms, 1, kI32Max),
      IntKey("group.consumer.min.heartbeat.interval.ms",
             "Smallest allowed group.consumer.heartbeat.interval.ms.",
             &GroupConfig::consumer_min_heartbeat_interval_ms, 1, kI32Max),
      IntKey("group.consumer.max.heartbeat.interval.ms",
             "Largest allowed group.consumer.heartbeat.interval.ms.",
             &GroupConfig::consumer_max_heartbeat_interval_ms, 1, kI32Max),
      IntKey("group.consumer.max.size", "Most members a consumer-protocol group may have.",
             &GroupConfig::consumer_max_size, 1, kI32Max),
      IntKey("group.share.session.timeout.ms",
             "Session timeout of share-group (KIP-932) members.",
             &GroupConfig::share_session_timeout_ms, 1, kI32Max),
      IntKey("group.share.heartbeat.interval.ms",
             "Heartbeat interval told to share-group (KIP-932) members.",
             &GroupConfig::share_heartbeat_interval_ms, 1, kI32Max),
      IntKey("group.share.max.size", "Most members a share group may have.",
             &GroupConfig::share_max_size, 1, 1000),
      IntKey("group.share.min.session.timeout.ms", "Smallest share.session.timeout.ms a group config may set.",
             &GroupConfig::share_min_session_timeout_ms, 1, kI32Max),
      IntKey("group.share.min.heartbeat.interval.ms", "Smallest share.heartbeat.interval.ms a group config may set.",
             &GroupConfig::share_min_heartbeat_interval_ms, 1, kI32Max),
      IntKey("group.share.min.record.lock.duration.ms", "Smallest share.record.lock.duration.ms a group config may set.",
             &GroupConfig::share_min_record_lock_duration_ms, 1, kI32Max),
      IntKey("group.share.max.session.timeout.ms", "Largest share.session.timeout.ms a group config may set.",
             &GroupConfig::share_max_session_timeout_ms, 1, kI32Max),
      IntKey("group.share.max.heartbeat.interval.ms", "Largest share.heartbeat.interval.ms a group config may set.",
             &GroupConfig::share_max_heartbeat_interval_ms, 1, kI32Max),
      IntKey("group.share.max.record.lock.duration.ms", "Largest share.record.lock.duration.ms a group config may set.",
             &GroupConfig::share_max_record_lock_duration_ms, 1, kI32Max),
      IntKey("group.share.record.lock.duration.ms",
             "How long a share-group member holds a record it acquired before the broker "
             "delivers it again.",
             &GroupConfig::share_record_lock_duration_ms, 1000, 3600000),
      IntKey("group.share.delivery.count.limit",
             "Deliveries of a share-group record after which it is archived, not redelivered.",
             &GroupConfig::share_delivery_count_limit, 2, 10),
      IntKey("group.share.partition.max.record.locks",
             "Most records of one share-partition in flight (acquired or awaiting redelivery "
             "behind the first unacknowledged one).",
             &GroupConfig::share_partition_max_record_locks, 100, 10000),
      IntKey("group.share.max.share.sessions",
             "Most share sessions (ShareFetch consumers) this broker keeps.",
             &GroupConfig::share_max_share_sessions, 1, 1000000),
      GroupKey{"group.consumer.assignors",
               "Server-side assignors of consumer-protocol groups (uniform, range or Kafka's "
               "class names), comma-separated; the first is the default.",
               [](GroupConfig& c, const std::string& value) -> Status {
                 std::vector<std::string> names;
                 size_t start = 0;
                 while (start <= value.size()) {
                   size_t end = value.find(',', start);
                   if (end == std::string::npos) end = value.size();
                   std::string item = value.substr(start, end - start);
                   item.erase(0, item.find_first_not_of(" \t"));
                   item.erase(item.find_last_not_of(" \t") + 1);
                   auto name = AssignorShortName(item);
                   if (!name)
                     return Status::InvalidArgument("group.consumer.assignors: unknown assignor '" +
                                                    item + "' (uniform, range)");
                   names.push_back(*name);
                   start = end + 1;
                 }
                 c.consumer_assignors = std::move(names);
                 return Status::OK();
               },
               [](const GroupConfig& c) {
                 std::string out;
                 for (const std::string& n : c.consumer_assignors) out += (out.empty() ? "" : ",") + n;
                 return out;
               }},
      GroupKey{"headrace.offsets.commit.fsync",
               "Answer OffsetCommit only after the coordinator's log is fsynced.",
               [](GroupConfig& c, const std::string& value) -> Status {
                 if (value != "true" && value != "false")
                   return Status::InvalidArgument(
                       "headrace.offsets.commit.fsync: must be true or false, got '" + value +
                       "'");
                 c.commit_fsync = value == "true";
                 return Status::OK();
               },
               [](const GroupConfig& c) { return std::string(c.commit_fsync ? "true" : "false"); },
               ConfigType::kBoolean},
  };
  return keys;
}

HR_REGISTER_CONFIG_FAMILY(GroupConfig, "group", &Keys);

}  // namespace

Status GroupConfig::Set(const std::string& key, const std::string& value) {
  return SetFromTable(Keys(), *this, key, value, "group");
}

std::vector<GroupConfig::Setting> GroupConfig::Describe() const {
  return DescribeTable(Keys(), *this);
}

Status GroupConfig::Extract(std::map<std::string, std::string>& props) {
  HR_RETURN_IF_ERROR(ExtractFromTable(Keys(), *this, props));
  if (min_session_timeout_ms > max_session_timeout_ms)
    return Status::InvalidArgument(
        "group.min.session.timeout.ms must not exceed group.max.session.timeout.ms");
  if (consumer_session_timeout_ms < consumer_min_session_timeout_ms ||
      consumer_session_timeout_ms > consumer_max_session_timeout_ms)
    return Status::InvalidArgument(
        "group.consumer.session.timeout.ms must be within group.consumer.min.session.timeout.ms "
        "and group.consumer.max.session.timeout.ms");
  if (consumer_heartbeat_interval_ms < consumer_min_heartbeat_interval_ms ||
      consumer_heartbeat_interval_ms > consumer_max_heartbeat_interval_ms)
    return Status::InvalidArgument(
        "group.consumer.heartbeat.interval.ms must be within group.consumer.min.heartbeat."
        "interval.ms and group.consumer.max.heartbeat.interval.ms");
  if (consumer_heartbeat_interval_ms >= consumer_session_timeout_ms)
    return Status::InvalidArgument(
        "group.consumer.heartbeat.interval.ms must be lower than group.consumer.session.timeout.ms");
  if (share_heartbeat_interval_ms >= share_session_timeout_ms)
    return Status::InvalidArgument(
        "group.share.heartbeat.interval.ms must be lower than group.share.session.timeout.ms");
  return Status::OK();
}

}  // namespace headrace::broker::group
