// DescribeLogDirs (key 35), v0..4. The broker has one data directory
// (log.dirs), so the response holds exactly one result: that directory's
// absolute path and, for each hosted partition asked for, its size in bytes
// (the sum of its segment .log files, Partition::size_bytes()), its offset
// lag (LEO - HW, 0 on a single node once an append returns) and
// is_future_key false (AlterReplicaLogDirs does not exist here).
//   topics null        every partition of every topic
//   topics [...]       only the named topic/partitions; unknown topics and
//                      partitions are left out (as Kafka does), duplicates
//                      are reported once
// v3+ carries a top-level error code (always NONE: there are no ACLs).
// v4+ adds the volume's total and usable bytes (statvfs; usable = what a
// non-root writer may still use). When the directory cannot be stat'ed the
// result is KAFKA_STORAGE_ERROR with no topics.
#include <sys/statvfs.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "broker/api/handler.h"
#include "broker/kafka_error.h"

namespace headrace::broker {
namespace {

using Req = protocol::DescribeLogDirsRequest;
using Resp = protocol::DescribeLogDirsResponse;

// The data dir as an absolute, normalised path without a trailing slash.
std::string AbsoluteDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(dir, ec);
  if (ec) p = dir;
  std::string s = p.lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

Resp::DescribeLogDirsPartition Describe(const Partition& p) {
  Resp::DescribeLogDirsPartition out;
  out.partition_index = p.partition();
  out.partition_size = p.size_bytes();
  const int64_t lag = p.log_end_offset().value() - p.high_watermark().value();
  out.offset_lag = lag > 0 ? lag : 0;
  out.is_future_key = false;
  return out;
}

// Every partition of every topic, topics sorted by name.
std::vector<Resp::DescribeLogDirsTopic> AllTopics(const TopicRegistry& topics) {
  std::vector<Resp::DescribeLogDirsTopic> out;
  for (const auto& topic : topics.ListTopics()) {
    Resp::DescribeLogDirsTopic t;
    t.name = topic->name;
    for (const auto& p : topic->partitions) {
      if (p) t.partitions.push_back(Describe(*p));  // null: no replica here (cluster mode)
    }
    out.push_back(std::move(t));
  }
  return out;
}

// The requested partitions that exist, grouped by topic (sorted by name,
// partitions ascending). A topic none of whose partitions exist is absent.
std::vector<Resp::DescribeLogDirsTopic> SomeTopics(
    const TopicRegistry& topics, const std::vector<Req::DescribableLogDirTopic>& wanted) {
  std::map<std::string, std::set<int32_t>> asked;
  for (const auto& w : wanted) asked[w.topic].insert(w.partitions.begin(), w.partitions.end());
  std::vector<Resp::DescribeLogDirsTopic> out;
  for (const auto& [name, partitions] : asked) {
    auto topic = topics.FindTopic(name);
    if (!topic) continue;
    Resp::DescribeLogDirsTopic t;
    t.name = name;
    for (int32_t index : partitions) {
      if (index < 0 || index >= topic->partition_count() || !topic->partitions[index]) continue;
      t.partitions.push_back(Describe(*topic->partitions[index]));
    }
    if (!t.partitions.empty()) out.push_back(std::move(t));
  }
  return out;
}

void HandleDescribeLogDirs(BrokerContext& ctx, Req& req, Request request) {
  Resp resp;
  resp.error_code = Code(KafkaError::kNone);
  Resp::DescribeLogDirsResult dir;
  dir.log_dir = AbsoluteDir(ctx.config().data_dir);
  struct statvfs vfs {};
  if (::statvfs(dir.log_dir.c_str(), &vfs) != 0) {
    dir.error_code = Code(KafkaError::kKafkaStorageError);
  } else {
    dir.error_code = Code(KafkaError::kNone);
    dir.total_bytes = static_cast<int64_t>(vfs.f_blocks) * static_cast<int64_t>(vfs.f_frsize);
    dir.usable_bytes = static_cast<int64_t>(vfs.f_bavail) * static_cast<int64_t>(vfs.f_frsize);
    dir.topics = req.topics ? SomeTopics(ctx.topics(), *req.topics) : AllTopics(ctx.topics());
  }
  resp.results.push_back(std::move(dir));
  request.Reply(resp);
}

}  // namespace

extern const ApiHandler kDescribeLogDirsHandler =
    MakeHandler<protocol::DescribeLogDirsRequest, HandleDescribeLogDirs>(0, 4);

}  // namespace headrace::broker
