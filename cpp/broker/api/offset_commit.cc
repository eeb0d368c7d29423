// OffsetCommit (key 8), v0..9: stores a group's committed offsets, durably
// (group/group_log.h; answered after the fsync unless
// headrace.offsets.commit.fsync=false). A simple consumer (generation -1,
// empty member id) may commit while the group has no members. Partitions of
// unknown topics get UNKNOWN_TOPIC_OR_PARTITION. v1 commit timestamps and
// v2..4 retention times are accepted and ignored (offsets.retention.minutes
// applies).
#include "broker/api/group_log_wait.h"
#include "broker/api/handler.h"
#include "broker/api/partition_checks.h"
#include "broker/group/group_coordinator.h"
#include "broker/kafka_error.h"

namespace headrace::broker {
namespace {

using Req = protocol::OffsetCommitRequest;
using Resp = protocol::OffsetCommitResponse;

void HandleOffsetCommit(BrokerContext& ctx, Req& req, Request request) {
  const std::shared_ptr<group::GroupCoordinator> groups = ctx.coordinator();
  Resp resp;
  group::CommitRequest commit;
  commit.group_id = req.group_id;
  commit.member_id = req.member_id;
  commit.instance_id = req.group_instance_id;
  commit.generation = request.version() >= 1 ? req.generation_id_or_member_epoch : -1;
  // Where each committed partition's answer goes.
  std::vector<std::pair<size_t, size_t>> slots;
  for (auto& t : req.topics) {
    Resp::OffsetCommitResponseTopic rt;
    rt.name = t.name;
    for (auto& p : t.partitions) {
      Resp::OffsetCommitResponsePartition rp;
      rp.partition_index = p.partition_index;
      if (!PartitionExists(ctx, t.name, p.partition_index)) {
        rp.error_code = Code(KafkaError::kUnknownTopicOrPartition);
      } else {
        slots.emplace_back(resp.topics.size(), rt.partitions.size());
        commit.partitions.push_back(group::CommitPartition{
            t.name, p.partition_index, p.committed_offset, p.committed_leader_epoch,
            p.committed_metadata});
      }
      rt.partitions.push_back(rp);
    }
    resp.topics.push_back(std::move(rt));
  }
  if (!commit.partitions.empty() || req.group_id.empty()) {
    std::vector<KafkaError> errors =
        groups ? groups->Commit(commit)
                   : std::vector<KafkaError>(commit.partitions.size(),
                                             KafkaError::kCoordinatorNotAvailable);
    for (size_t i = 0; i < slots.size(); ++i)
      resp.topics[slots[i].first].partitions[slots[i].second].error_code = Code(errors[i]);
    if (req.group_id.empty())  // every partition, known topic or not
      for (auto& t : resp.topics)
        for (auto& p : t.partitions) p.error_code = Code(KafkaError::kInvalidGroupId);
  }
  ReplyWhenGroupLogCommitted(ctx, std::move(request), std::move(resp), [](Resp& r, KafkaError e) {
    for (auto& t : r.topics)
      for (auto& p : t.partitions)
        if (p.error_code == 0) p.error_code = Code(e);
  });
}

}  // namespace

extern const ApiHandler kOffsetCommitHandler =
    MakeHandler<protocol::OffsetCommitRequest, HandleOffsetCommit>(0, 9);

}  // namespace headrace::broker
