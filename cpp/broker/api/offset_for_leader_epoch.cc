// OffsetForLeaderEpoch (key 23), v0-4. For each partition, the end offset
// of the requested leader epoch in this broker's log, from the partition's
// leader-epoch cache (KIP-101, KIP-279): the largest epoch <= the requested
// one and the start offset of the next larger epoch, or the log end offset
// for the latest epoch; epoch -1 / offset -1 when the log knows no such
// epoch. Consumers use it to detect truncation after a leader change
// (KIP-320), followers to truncate a diverged log.
// Errors per partition: UNKNOWN_TOPIC_OR_PARTITION, FENCED_LEADER_EPOCH /
// UNKNOWN_LEADER_EPOCH (current_leader_epoch older / newer than ours, v2+),
// NOT_LEADER_OR_FOLLOWER on a follower, KAFKA_STORAGE_ERROR when offline.
#include "broker/api/authorize.h"
#include "broker/api/handler.h"
#include "broker/api/partition_checks.h"
#include "broker/base/kafka_error.h"

namespace headrace::broker {
namespace {

using Response = protocol::OffsetForLeaderEpochResponse;
using PartitionResponse = Response::EpochEndOffset;

void Answer(const Partition* partition, const protocol::OffsetForLeaderEpochRequest::OffsetForLeaderPartition& in,
            PartitionResponse* out) {
  out->partition = in.partition;
  out->leader_epoch = -1;
  out->end_offset = -1;
  KafkaError error = KafkaError::kNone;
  if (partition == nullptr) {
    error = KafkaError::kUnknownTopicOrPartition;
  } else if (KafkaError e = CheckLeaderEpoch(in.current_leader_epoch, *partition); e != KafkaError::kNone) {
    error = e;
  } else if (!partition->is_leader()) {
    error = KafkaError::kNotLeaderOrFollower;
  } else if (partition->offline()) {
    error = KafkaError::kKafkaStorageError;
  } else {
    EpochEndOffset end = partition->EndOffsetForEpoch(LeaderEpoch(in.leader_epoch));
    out->leader_epoch = end.epoch.value();
    out->end_offset = end.end_offset.value();
  }
  out->error_code = Code(error);
}

void HandleOffsetForLeaderEpoch(BrokerContext& ctx, protocol::OffsetForLeaderEpochRequest& request,
                                Request req) {
  Response resp;
  resp.topics.reserve(request.topics.size());
  // ACLs (KIP-320, as Kafka): CLUSTER_ACTION (followers) or DESCRIBE on
  // the topic (consumers), else TOPIC_AUTHORIZATION_FAILED.
  const bool cluster_action = AuthorizedOnCluster(ctx, req, AclOperation::kClusterAction);
  for (const auto& t : request.topics) {
    auto& topic_resp = resp.topics.emplace_back();
    topic_resp.topic = t.topic;
    const bool allowed =
        cluster_action || AuthorizedOnTopic(ctx, req, AclOperation::kDescribe, t.topic);
    for (const auto& p : t.partitions) {
      if (!allowed) {
        auto& out = topic_resp.partitions.emplace_back();
        out.partition = p.partition;
        out.leader_epoch = -1;
        out.end_offset = -1;
        out.error_code = Code(KafkaError::kTopicAuthorizationFailed);
        continue;
      }
      Answer(ctx.topics().FindPartition(t.topic, p.partition).get(), p,
             &topic_resp.partitions.emplace_back());
    }
  }
  req.Reply(resp);
}

}  // namespace

extern const ApiHandler kOffsetForLeaderEpochHandler =
    MakeHandler<protocol::OffsetForLeaderEpochRequest, HandleOffsetForLeaderEpoch>(0, 4);

}  // namespace headrace::broker
