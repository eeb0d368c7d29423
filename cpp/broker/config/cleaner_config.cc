#include "broker/config/cleaner_config.h"

#include <cstdio>
#include <cstdlib>

namespace headrace::broker {
namespace {

using Key = ConfigKey<CleanerConfig>;

Key DoubleKey(const char* name, const char* doc, double CleanerConfig::*field, double min,
              double max) {
  return Key{name, doc,
             [=](CleanerConfig& c, const std::string& v) -> Status {
               char* end = nullptr;
               double d = v.empty() ? 0 : std::strtod(v.c_str(), &end);
               if (v.empty() || end != v.c_str() + v.size() || !(d >= min && d <= max))
                 return Status::InvalidArgument(std::string(name) + ": must be a number in [" +
                                                std::to_string(min) + ", " + std::to_string(max) +
                                                "], got '" + v + "'");
               c.*field = d;
               return Status::OK();
             },
             [=](const CleanerConfig& c) {
               char buf[40];
               std::snprintf(buf, sizeof(buf), "%.15g", c.*field);
               return std::string(buf);
             }};
}

const std::vector<Key>& Keys() {
  static const std::vector<Key> keys = {
      Key{"log.cleaner.enable", "Run the log cleaner (compaction of cleanup.policy=compact topics).",
          [](CleanerConfig& c, const std::string& v) -> Status {
            if (v != "true" && v != "false")
              return Status::InvalidArgument("log.cleaner.enable: must be true or false, got '" +
                                             v + "'");
            c.enable = v == "true";
            return Status::OK();
          },
          [](const CleanerConfig& c) { return std::string(c.enable ? "true" : "false"); }},
      IntConfigKey("log.cleaner.threads", "Cleaner threads (each cleans one log at a time).",
                   &CleanerConfig::threads, 0, 0x7fffffff),
      IntConfigKey("log.cleaner.dedupe.buffer.size",
                   "Memory of the key -> offset maps, shared by all cleaner threads; a log with "
                   "more keys is cleaned in several passes.",
                   &CleanerConfig::dedupe_buffer_size, 0, INT64_MAX),
      DoubleKey("log.cleaner.io.max.bytes.per.second",
                "Bytes per second the cleaner threads read and write together.",
                &CleanerConfig::io_max_bytes_per_second, 0, 1.7976931348623157e308),
      IntConfigKey("log.cleaner.backoff.ms", "Sleep of a cleaner thread when no log needs cleaning.",
                   &CleanerConfig::backoff_ms, 0, INT64_MAX),
      // log.cleaner.min.cleanable.ratio, .delete.retention.ms, .min/.max.compaction.lag.ms
      // are the broker defaults of topic keys: rows of the broker table generated
      // from the topic table (topic_config.cc), dynamic as in Kafka. The fields
      // below keep Kafka's defaults for a topic whose value is unset.
      IntConfigKey("log.cleaner.io.buffer.size", "Accepted for compatibility; no effect.",
                   &CleanerConfig::io_buffer_size, 0, 0x7fffffff),
      DoubleKey("log.cleaner.io.buffer.load.factor", "Accepted for compatibility; no effect.",
                &CleanerConfig::io_buffer_load_factor, 0, 1.7976931348623157e308),
  };
  return keys;
}

HR_REGISTER_CONFIG_FAMILY(CleanerConfig, "cleaner", &Keys);

}  // namespace

Status CleanerConfig::Set(const std::string& key, const std::string& value) {
  return SetFromTable(Keys(), *this, key, value, "cleaner");
}

std::vector<SettingDoc> CleanerConfig::Describe() const { return DescribeTable(Keys(), *this); }

Status CleanerConfig::Extract(std::map<std::string, std::string>& props) {
  return ExtractFromTable(Keys(), *this, props);
}

}  // namespace headrace::broker
