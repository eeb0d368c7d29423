#include "broker/group/group_config.h"

#include <charconv>
#include <functional>
#include <vector>
#include <string_view>

namespace headrace::broker::group {
namespace {

Result<int64_t> ParseInt(const std::string& key, const std::string& v, int64_t min, int64_t max) {
  int64_t out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || p != v.data() + v.size() || out < min || out > max)
    return Status::InvalidArgument(key + ": must be an integer in [" + std::to_string(min) + ", " +
                                   std::to_string(max) + "], got '" + v + "'");
  return out;
}

constexpr int64_t kI32Max = 0x7fffffff;

// One group setting: its key, a one-line doc, and how it is written and read.
// Keys() is the one list of group keys (Set, Describe).
struct GroupKey {
  const char* name;
  const char* doc;
  std::function<Status(GroupConfig&, const std::string& value)> set;
  std::function<std::string(const GroupConfig&)> get;
};

// An integer key in [min, max] stored as value * scale in `field`.
template <typename T>
GroupKey IntKey(const char* name, const char* doc, T GroupConfig::*field, int64_t min,
                int64_t max, int64_t scale = 1) {
  return GroupKey{
      name, doc,
      [=](GroupConfig& c, const std::string& value) -> Status {
        HR_ASSIGN_OR_RETURN(int64_t v, ParseInt(name, value, min, max));
        c.*field = static_cast<T>(v * scale);
        return Status::OK();
      },
      [=](const GroupConfig& c) { return std::to_string(c.*field / scale); }};
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
               [](const GroupConfig& c) { return std::string(c.commit_fsync ? "true" : "false"); }},
  };
  return keys;
}

}  // namespace

Status GroupConfig::Set(const std::string& key, const std::string& value) {
  for (const GroupKey& k : Keys())
    if (key == k.name) return k.set(*this, value);
  return Status::NotFound("not a group setting: " + key);
}

std::vector<GroupConfig::Setting> GroupConfig::Describe() const {
  std::vector<Setting> out;
  for (const GroupKey& k : Keys()) out.push_back({k.name, k.get(*this), k.doc});
  return out;
}

Status GroupConfig::Extract(std::map<std::string, std::string>& props) {
  for (auto it = props.begin(); it != props.end();) {
    Status st = Set(it->first, it->second);
    if (st.code() == StatusCode::kNotFound) {
      ++it;
      continue;
    }
    HR_RETURN_IF_ERROR(st);
    it = props.erase(it);
  }
  if (min_session_timeout_ms > max_session_timeout_ms)
    return Status::InvalidArgument(
        "group.min.session.timeout.ms must not exceed group.max.session.timeout.ms");
  return Status::OK();
}

}  // namespace headrace::broker::group
