// DescribeLogDirs (key 35), v0..4: one result per log directory (log.dirs,
// in order; LogDirs normalises them to absolute paths without a trailing
// slash). For each hosted partition asked for, in the directory holding
// it: its size in bytes (the sum of its segment .log files), its offset lag
// (LEO - HW, 0 on a single node once an append returns) and is_future_key
// false; a partition being moved there (AlterReplicaLogDirs) is listed
// again under the target directory with is_future_key true, the future
// copy's size and its lag behind the current one.
//   topics null        every partition of every topic
//   topics [...]       only the named topic/partitions; unknown topics and
//                      partitions are left out (as Kafka does), duplicates
//                      are reported once
// An offline directory (LogDirs) answers KAFKA_STORAGE_ERROR with no topics
// and total/usable bytes -1, as Kafka does; so does one statvfs fails on.
// v3+ carries a top-level error code (always NONE: there are no ACLs).
// v4+ adds the volume's total and usable bytes (statvfs; usable = what a
// non-root writer may still use).
#include <sys/statvfs.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "broker/api/authorize.h"
#include "broker/api/handler.h"
#include "broker/base/kafka_error.h"

namespace headrace::broker {
namespace {

using Req = protocol::DescribeLogDirsRequest;
using Resp = protocol::DescribeLogDirsResponse;

using Wanted = std::map<std::string, std::set<int32_t>>;

bool IsWanted(const Wanted* wanted, const std::string& topic, int32_t partition) {
  if (!wanted) return true;
  auto it = wanted->find(topic);
  return it != wanted->end() && it->second.count(partition);
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

// Per directory: topic -> partitions (sorted by topic name).
using DirTopics = std::map<std::string, std::vector<Resp::DescribeLogDirsPartition>>;

std::vector<DirTopics> Collect(const TopicRegistry& topics, const Wanted* wanted) {
  const LogDirs& dirs = topics.log_dirs();
  std::vector<DirTopics> out(dirs.size());
  for (const auto& topic : topics.ListTopics()) {
    for (const auto& p : topic->partitions) {
      if (!p || !IsWanted(wanted, topic->name, p->partition())) continue;  // null: no replica
      const int d = dirs.IndexOf(p->dir());
      if (d < 0 || !dirs.online(d)) continue;
      out[d][topic->name].push_back(Describe(*p));
    }
  }
  for (const auto& f : topics.FutureReplicas()) {
    if (f.dir < 0 || !IsWanted(wanted, f.tp.topic, f.tp.partition)) continue;
    Resp::DescribeLogDirsPartition p;
    p.partition_index = f.tp.partition;
    p.partition_size = f.size_bytes;
    p.offset_lag = f.offset_lag;
    p.is_future_key = true;
    out[f.dir][f.tp.topic].push_back(p);
  }
  return out;
}

void HandleDescribeLogDirs(BrokerContext& ctx, Req& req, Request request) {
  Resp resp;
  resp.error_code = Code(KafkaError::kNone);
  // ACLs: DESCRIBE on the CLUSTER, else no directory (v3+: the error).
  if (!AuthorizedOnCluster(ctx, request, AclOperation::kDescribe)) {
    resp.error_code = Code(KafkaError::kClusterAuthorizationFailed);
    request.Reply(resp);
    return;
  }
  std::optional<Wanted> wanted;
  if (req.topics) {
    wanted.emplace();
    for (const auto& w : *req.topics) (*wanted)[w.topic].insert(w.partitions.begin(), w.partitions.end());
  }
  const LogDirs& dirs = ctx.topics().log_dirs();
  std::vector<DirTopics> per_dir = Collect(ctx.topics(), wanted ? &*wanted : nullptr);
  for (int d = 0; d < dirs.size(); ++d) {
    Resp::DescribeLogDirsResult dir;
    dir.log_dir = dirs.path(d);
    struct statvfs vfs {};
    if (!dirs.online(d) || ::statvfs(dir.log_dir.c_str(), &vfs) != 0) {
      dir.error_code = Code(KafkaError::kKafkaStorageError);
      resp.results.push_back(std::move(dir));
      continue;
    }
    dir.error_code = Code(KafkaError::kNone);
    dir.total_bytes = static_cast<int64_t>(vfs.f_blocks) * static_cast<int64_t>(vfs.f_frsize);
    dir.usable_bytes = static_cast<int64_t>(vfs.f_bavail) * static_cast<int64_t>(vfs.f_frsize);
    for (auto& [name, partitions] : per_dir[d]) {
      Resp::DescribeLogDirsTopic t;
      t.name = name;
      std::sort(partitions.begin(), partitions.end(), [](const auto& a, const auto& b) {
        return a.partition_index < b.partition_index;
      });
      t.partitions = std::move(partitions);
      dir.topics.push_back(std::move(t));
    }
    resp.results.push_back(std::move(dir));
  }
  request.Reply(resp);
}

}  // namespace

extern const ApiHandler kDescribeLogDirsHandler =
    MakeHandler<protocol::DescribeLogDirsRequest, HandleDescribeLogDirs>(0, 4);

}  // namespace headrace::broker
