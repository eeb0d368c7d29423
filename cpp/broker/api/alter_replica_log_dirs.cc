// AlterReplicaLogDirs (key 34), v0..2: moves partitions of this broker
// between its log directories (TopicRegistry::MoveReplica, LogDirMover:
// a "-future" copy made while the partition serves, then swapped in). The
// answer comes once each move is queued, as Kafka answers once the future
// replica exists; DescribeLogDirs shows a move in progress with
// is_future_key. Per partition:
//   NONE                         queued, or already in that directory
//   LOG_DIR_NOT_FOUND            the path is not one of log.dirs
//   KAFKA_STORAGE_ERROR          the target directory or the partition is
//                                offline
//   UNKNOWN_TOPIC_OR_PARTITION   single node: no such partition
//   REPLICA_NOT_AVAILABLE        cluster mode: no replica of it on this
//                                broker (Kafka's answer for this API)
//   INVALID_TOPIC_EXCEPTION      single node: __consumer_offsets /
//                                __transaction_state, which are the
//                                coordinators' own logs in the first
//                                log directory, not partitions
// In cluster mode the broker's replica moves whether it leads or follows
// the partition (log_dir_mover.h), internal topics' too: a coordinator on a
// moved partition is reloaded from the copy (coordinator_leadership.h), its
// clients seeing NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS meanwhile.
// A path is matched after normalisation (absolute, no trailing slash), as
// DescribeLogDirs lists it.
#include <filesystem>

#include "broker/api/authorize.h"
#include "broker/api/handler.h"
#include "broker/base/kafka_error.h"
#include "broker/partition/topic_name.h"

namespace headrace::broker {
namespace {

using Req = protocol::AlterReplicaLogDirsRequest;
using Resp = protocol::AlterReplicaLogDirsResponse;

std::string Normalise(const std::string& dir) {
  std::string s = std::filesystem::path(dir).lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

void HandleAlterReplicaLogDirs(BrokerContext& ctx, Req& req, Request request) {
  Resp resp;
  // ACLs: ALTER on the CLUSTER, else every replica CLUSTER_AUTHORIZATION_FAILED.
  const bool allowed = AuthorizedOnCluster(ctx, request, AclOperation::kAlter);
  for (const auto& dir : req.dirs) {
    const std::string path = Normalise(dir.path);
    for (const auto& topic : dir.topics) {
      Resp::AlterReplicaLogDirTopicResult t;
      t.topic_name = topic.name;
      for (int32_t partition : topic.partitions) {
        Resp::AlterReplicaLogDirPartitionResult r;
        r.partition_index = partition;
        if (!allowed) {
          r.error_code = Code(KafkaError::kClusterAuthorizationFailed);
        } else if (IsInternalTopic(topic.name) && ctx.state->cluster() == nullptr) {
          r.error_code = Code(KafkaError::kInvalidTopicException);
        } else {
          r.error_code = Code(ToKafkaError(ctx.topics().MoveReplica(topic.name, partition, path)));
        }
        t.partitions.push_back(r);
      }
      resp.results.push_back(std::move(t));
    }
  }
  request.Reply(resp);
}

}  // namespace

extern const ApiHandler kAlterReplicaLogDirsHandler =
    MakeHandler<protocol::AlterReplicaLogDirsRequest, HandleAlterReplicaLogDirs>(0, 2);

}  // namespace headrace::broker
