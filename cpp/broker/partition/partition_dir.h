// Names of partition directories in the data directory (the one place that
// builds and parses them):
//   <data_dir>/<topic>-<partition>                  a live partition's log
//   <data_dir>/<topic>-<partition>.<hex>-delete     a deleted one, being removed
//   <data_dir>/<topic>-<partition>.<hex>-future     a copy being made by a move
//                                                   between log directories
//                                                   (AlterReplicaLogDirs)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace headrace::broker {

struct TopicPartition {
  std::string topic;
  int32_t partition = 0;
  bool operator==(const TopicPartition&) const = default;
  std::string ToString() const { return topic + "-" + std::to_string(partition); }
};

// "<data_dir>/<topic>-<partition>"
std::string PartitionDirPath(const std::string& data_dir, const TopicPartition& tp);
// "<topic>-<partition>.<unique_hex>-delete"
std::string DeletedPartitionDirName(const TopicPartition& tp, const std::string& unique_hex);
// "<topic>-<partition>.<unique_hex>-future"
std::string FuturePartitionDirName(const TopicPartition& tp, const std::string& unique_hex);
// The partition of a "-future" directory name, or nullopt.
std::optional<TopicPartition> ParseFuturePartitionDirName(std::string_view name);
// A live partition directory name -> its topic and partition, or nullopt.
std::optional<TopicPartition> ParsePartitionDirName(std::string_view name);
// True for names ending in "-delete" that otherwise parse as above.
bool IsDeletedPartitionDirName(std::string_view name);

}  // namespace headrace::broker
