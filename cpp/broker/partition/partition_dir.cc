#include "broker/partition/partition_dir.h"

#include <charconv>

#include "broker/partition/topic_name.h"

namespace headrace::broker {

std::string PartitionDirPath(const std::string& data_dir, const TopicPartition& tp) {
  return data_dir + "/" + tp.ToString();
}

std::string DeletedPartitionDirName(const TopicPartition& tp, const std::string& unique_hex) {
  return tp.ToString() + "." + unique_hex + "-delete";
}

std::optional<TopicPartition> ParsePartitionDirName(std::string_view name) {
  size_t dash = name.rfind('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 1 == name.size()) return std::nullopt;
  std::string_view digits = name.substr(dash + 1);
  int32_t p = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), p);
  if (ec != std::errc() || ptr != digits.data() + digits.size() || p < 0) return std::nullopt;
  if (digits.size() > 1 && digits[0] == '0') return std::nullopt;
  std::string_view topic = name.substr(0, dash);
  if (!ValidateTopicName(topic).ok()) return std::nullopt;
  return TopicPartition{std::string(topic), p};
}

std::string FuturePartitionDirName(const TopicPartition& tp, const std::string& unique_hex) {
  return tp.ToString() + "." + unique_hex + "-future";
}

namespace {

// "<topic>-<partition>.<hex><suffix>" -> the partition, or nullopt.
std::optional<TopicPartition> ParseSuffixed(std::string_view name, std::string_view suffix) {
  if (name.size() <= suffix.size() || name.substr(name.size() - suffix.size()) != suffix) {
    return std::nullopt;
  }
  std::string_view rest = name.substr(0, name.size() - suffix.size());
  size_t dot = rest.rfind('.');
  if (dot == std::string_view::npos) return std::nullopt;
  return ParsePartitionDirName(rest.substr(0, dot));
}

}  // namespace

std::optional<TopicPartition> ParseFuturePartitionDirName(std::string_view name) {
  return ParseSuffixed(name, "-future");
}

bool IsDeletedPartitionDirName(std::string_view name) {
  return ParseSuffixed(name, "-delete").has_value();
}

}  // namespace headrace::broker
