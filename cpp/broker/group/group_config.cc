#include "broker/group/group_config.h"

#include <charconv>
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

}  // namespace

Status GroupConfig::Set(const std::string& key, const std::string& value) {
  auto set32 = [&](int32_t& field, int64_t min) -> Status {
    HR_ASSIGN_OR_RETURN(int64_t v, ParseInt(key, value, min, kI32Max));
    field = static_cast<int32_t>(v);
    return Status::OK();
  };
  if (key == "group.min.session.timeout.ms") return set32(min_session_timeout_ms, 1);
  if (key == "group.max.session.timeout.ms") return set32(max_session_timeout_ms, 1);
  if (key == "group.initial.rebalance.delay.ms") return set32(initial_rebalance_delay_ms, 0);
  if (key == "group.max.size") return set32(max_size, 1);
  if (key == "offset.metadata.max.bytes") return set32(offset_metadata_max_bytes, 0);
  if (key == "headrace.group.timer.interval.ms") return set32(timer_interval_ms, 1);
  if (key == "offsets.topic.segment.bytes") {
    int32_t v = 0;
    HR_RETURN_IF_ERROR(set32(v, 4096));
    log_segment_bytes = v;
    return Status::OK();
  }
  if (key == "offsets.retention.minutes") {
    HR_ASSIGN_OR_RETURN(int64_t v, ParseInt(key, value, 1, kI32Max));
    offsets_retention_ms = v * 60000;
    return Status::OK();
  }
  if (key == "offsets.retention.check.interval.ms") {
    HR_ASSIGN_OR_RETURN(offsets_retention_check_interval_ms, ParseInt(key, value, 1, INT64_MAX));
    return Status::OK();
  }
  if (key == "headrace.offsets.commit.fsync") {
    if (value == "true") commit_fsync = true;
    else if (value == "false") commit_fsync = false;
    else return Status::InvalidArgument(key + ": must be true or false, got '" + value + "'");
    return Status::OK();
  }
  return Status::NotFound("not a group setting: " + key);
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
