#include "broker/config/topic_config_values.h"

#include <algorithm>

#include "broker/base/kafka_error.h"
#include "broker/config/topic_config.h"

namespace headrace::broker::topic_values {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

Status InvalidValue(std::string_view key, const std::string& rule) {
  return KafkaStatus(KafkaError::kInvalidConfig, std::string(key) + ": " + rule);
}

Result<int64_t> ParseFor(std::string_view key, std::string_view v, int64_t min, int64_t max) {
  auto r = ParseConfigInt(v, min, max);
  if (r.ok()) return r;
  std::string rule = max == kLongMax ? "must be an integer >= " + std::to_string(min)
                                     : "must be an integer between " + std::to_string(min) +
                                           " and " + std::to_string(max);
  return InvalidValue(key, rule);
}

Result<std::vector<std::string>> ParsePolicyList(std::string_view key, std::string_view v) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= v.size()) {
    size_t comma = v.find(',', start);
    if (comma == std::string_view::npos) comma = v.size();
    std::string item(Trim(v.substr(start, comma - start)));
    if (item != "delete" && item != "compact") {
      return InvalidValue(key, "must be a non-empty list of \"delete\" and/or \"compact\"");
    }
    if (std::find(items.begin(), items.end(), item) == items.end()) items.push_back(item);
    start = comma + 1;
  }
  return items;
}

Result<std::optional<Compression>> ParseCompressionType(std::string_view v) {
  if (v == "producer") return std::optional<Compression>();
  if (v == "uncompressed") return std::optional<Compression>(Compression::kNone);
  if (v == "gzip") return std::optional<Compression>(Compression::kGzip);
  if (v == "snappy") return std::optional<Compression>(Compression::kSnappy);
  if (v == "lz4") return std::optional<Compression>(Compression::kLz4);
  if (v == "zstd") return std::optional<Compression>(Compression::kZstd);
  return InvalidValue("compression.type",
                      "must be one of uncompressed, zstd, lz4, snappy, gzip, producer");
}

std::string FormatCompressionType(const std::optional<Compression>& c) {
  if (!c) return "producer";
  switch (*c) {
    case Compression::kNone: return "uncompressed";
    case Compression::kGzip: return "gzip";
    case Compression::kSnappy: return "snappy";
    case Compression::kLz4: return "lz4";
    case Compression::kZstd: return "zstd";
  }
  return "producer";
}

Result<std::string> GzipLevel(std::string_view v) {
  auto r = ParseConfigInt(v, -1, 9);
  if (!r.ok() || r.value() == 0) {
    return InvalidValue("compression.gzip.level", "must be -1 or an integer between 1 and 9");
  }
  return std::to_string(r.value());
}

std::function<Result<std::string>(std::string_view)> ThrottledReplicas(const char* name) {
  return [=](std::string_view v) -> Result<std::string> {
    if (v.empty() || v == "*") return std::string(v);
    std::string out;
    size_t start = 0;
    while (start <= v.size()) {
      size_t comma = v.find(',', start);
      if (comma == std::string_view::npos) comma = v.size();
      std::string_view item = Trim(v.substr(start, comma - start));
      size_t colon = item.find(':');
      if (colon == std::string_view::npos ||
          !ParseConfigInt(item.substr(0, colon), 0, kIntMax).ok() ||
          !ParseConfigInt(item.substr(colon + 1), 0, kIntMax).ok()) {
        return InvalidValue(name,
                            "must be \"*\" or a list of [partitionId]:[brokerId] pairs, e.g. 0:1,1:2");
      }
      out += (out.empty() ? "" : ",") + std::string(item);
      start = comma + 1;
    }
    return out;
  };
}

// message.format.version: a Kafka release or inter-broker protocol version
// string ("0.10.2", "2.8", "3.0", "3.0-IV1", ...). As Kafka's
// MetadataVersion.fromVersionString, only the significant dot-separated
// segments are read (three for 0.x, two otherwise): "0.10.0.0" is 0.10.0 and
// "3.0.1" is 3.0 (librdkafka's tests set "0.10.0.0"). Stored as given.
Result<std::string> MessageFormatVersion(std::string_view v) {
  auto bad = [&] {
    return InvalidValue("message.format.version",
                        "must be a Kafka version such as 0.10.2, 2.8, 3.0 or 3.0-IV1, got \"" +
                            std::string(v) + "\"");
  };
  std::string_view head = v;  // the significant segments
  const size_t significant = v.starts_with("0.") ? 3 : 2;
  size_t cut = std::string_view::npos;
  for (size_t i = 0, from = 0; i < significant; ++i, from = cut + 1) {
    cut = head.find('.', from);
    if (cut == std::string_view::npos) break;
  }
  if (cut != std::string_view::npos) head = head.substr(0, cut);
  std::string_view core = head;
  if (size_t iv = head.find("-IV"); iv != std::string_view::npos) {
    if (!ParseConfigInt(head.substr(iv + 3), 0, 99).ok()) return bad();
    core = head.substr(0, iv);
  }
  std::vector<int64_t> parts;
  size_t start = 0;
  while (start <= core.size()) {
    size_t dot = core.find('.', start);
    if (dot == std::string_view::npos) dot = core.size();
    auto n = ParseConfigInt(core.substr(start, dot - start), 0, 99);
    if (!n.ok()) return bad();
    parts.push_back(n.value());
    start = dot + 1;
  }
  if (parts.size() < 2 || parts.size() > 3) return bad();
  const int64_t major = parts[0], minor = parts[1];
  const bool known = (major == 0 && ((minor >= 8 && minor <= 11))) ||
                     (major == 1 && minor <= 1) || (major == 2 && minor <= 8) ||
                     (major == 3 && minor <= 9);
  if (!known) return bad();
  return std::string(v);
}

}  // namespace headrace::broker::topic_values
