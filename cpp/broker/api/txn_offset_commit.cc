// TxnOffsetCommit (key 28), v0..3: a transactional producer's offsets for a
// group, held pending for its producer id until the transaction's marker
// commits or aborts them (GroupCoordinator::CommitTxnOffsets; invisible to
// OffsetFetch until then). Answered once the group log is durable, as
// OffsetCommit. Errors per partition: UNKNOWN_TOPIC_OR_PARTITION for unknown
// topics; INVALID_GROUP_ID for an empty group id (every partition);
// COORDINATOR_NOT_AVAILABLE when this broker coordinates no groups; v3+
// (KIP-447) member checks ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID /
// FENCED_INSTANCE_ID; INVALID_PRODUCER_EPOCH for an epoch older than the
// producer's pending offsets carry; OFFSET_METADATA_TOO_LARGE.
#include "broker/api/group_log_wait.h"
#include "broker/api/handler.h"
#include "broker/api/partition_checks.h"
#include "broker/group/group_coordinator.h"
#include "broker/kafka_error.h"

namespace headrace::broker {
namespace {

using Req = protocol::TxnOffsetCommitRequest;
using Resp = protocol::TxnOffsetCommitResponse;

void HandleTxnOffsetCommit(BrokerContext& ctx, Req& req, Request request) {
  const std::shared_ptr<group::GroupCoordinator> groups = ctx.coordinator();
  Resp resp;
  group::TxnCommitRequest commit;
  commit.transactional_id = req.transactional_id;
  commit.group_id = req.group_id;
  commit.producer_id = req.producer_id;
  commit.producer_epoch = req.producer_epoch;
  if (request.version() >= 3) {
    commit.member_id = req.member_id;
    commit.instance_id = req.group_instance_id;
    commit.generation = req.generation_id;
  }
  // Where each committed partition's answer goes.
  std::vector<std::pair<size_t, size_t>> slots;
  for (auto& t : req.topics) {
    Resp::TxnOffsetCommitResponseTopic rt;
    rt.name = t.name;
    for (auto& p : t.partitions) {
      Resp::TxnOffsetCommitResponsePartition rp;
      rp.partition_index = p.partition_index;
      if (!PartitionExists(ctx, t.name, p.partition_index)) {
        rp.error_code = Code(KafkaError::kUnknownTopicOrPartition);
      } else {
        slots.emplace_back(resp.topics.size(), rt.partitions.size());
        commit.partitions.push_back(group::CommitPartition{
            t.name, p.partition_index, p.committed_offset,
            request.version() >= 2 ? p.committed_leader_epoch : -1, p.committed_metadata});
      }
      rt.partitions.push_back(rp);
    }
    resp.topics.push_back(std::move(rt));
  }
  if (!commit.partitions.empty() || req.group_id.empty()) {
    std::vector<KafkaError> errors =
        groups ? groups->CommitTxnOffsets(commit)
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

extern const ApiHandler kTxnOffsetCommitHandler =
    MakeHandler<protocol::TxnOffsetCommitRequest, HandleTxnOffsetCommit>(0, 3);

}  // namespace headrace::broker
