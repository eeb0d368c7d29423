#include "broker/group/group_config.h"

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
             "Accepted for compatibility; headrace's __consumer_offsets has one partition.",
             &GroupConfig::offsets_topic_num_partitions, 1, kI32Max),
      IntKey("offsets.retention.minutes", "How long committed offsets of an empty group are kept.",
             &GroupConfig::offsets_retention_ms, 1, kI32Max, 60000),
      IntKey("offsets.retention.check.interval.ms",
             "How often expired committed offsets are removed.",
             &GroupConfig::offsets_retention_check_interval_ms, 1, INT64_MAX),
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
  return Status::OK();
}

}  // namespace headrace::broker::group
