#include "broker/config/metrics_config.h"

namespace headrace::broker {
namespace {

using MetricsKey = ConfigKey<MetricsConfig>;

const std::vector<MetricsKey>& Keys() {
  static const std::vector<MetricsKey> keys = {
      MetricsKey{"headrace.http.listen",
                 "HOST:PORT of the HTTP listener (/metrics, /healthz, /readyz); empty = off.",
                 [](MetricsConfig& c, const std::string& value) -> Status {
                   HR_RETURN_IF_ERROR(ValidateHttpListen(value));
                   c.http_listen = value;
                   return Status::OK();
                 },
                 [](const MetricsConfig& c) { return c.http_listen; }},
      MetricsKey{"headrace.metrics.enable",
                 "Record request, topic, fsync and ISR metrics on the data path.",
                 [](MetricsConfig& c, const std::string& value) -> Status {
                   if (value != "true" && value != "false")
                     return Status::InvalidArgument(
                         "headrace.metrics.enable: must be true or false, got '" + value + "'");
                   c.enabled = value == "true";
                   return Status::OK();
                 },
                 [](const MetricsConfig& c) { return std::string(c.enabled ? "true" : "false"); }},
  };
  return keys;
}

HR_REGISTER_CONFIG_FAMILY(MetricsConfig, "metrics", &Keys);

}  // namespace

Status ValidateHttpListen(const std::string& value) {
  if (value.empty()) return Status::OK();
  const size_t colon = value.rfind(':');
  const std::string bad = "headrace.http.listen: must be HOST:PORT (port 0-65535) or empty, got '" +
                          value + "'";
  if (colon == std::string::npos || colon == 0) return Status::InvalidArgument(bad);
  const std::string host = value.substr(0, colon);
  if (host.find(':') != std::string::npos && (host.front() != '[' || host.back() != ']'))
    return Status::InvalidArgument(bad);  // an IPv6 address needs brackets
  auto port = ParseIntSetting("headrace.http.listen", value.substr(colon + 1), 0, 65535);
  if (!port.ok()) return Status::InvalidArgument(bad);
  return Status::OK();
}

Status MetricsConfig::Set(const std::string& key, const std::string& value) {
  return SetFromTable(Keys(), *this, key, value, "metrics");
}

std::vector<SettingDoc> MetricsConfig::Describe() const { return DescribeTable(Keys(), *this); }

Status MetricsConfig::Extract(std::map<std::string, std::string>& props) {
  return ExtractFromTable(Keys(), *this, props);
}

}  // namespace headrace::broker
