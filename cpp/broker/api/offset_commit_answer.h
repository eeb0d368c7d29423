// What OffsetCommit (8) and TxnOffsetCommit (28) share: per partition,
// UNKNOWN_TOPIC_OR_PARTITION for unknown topics and the group coordinator's
// answer for the others (COORDINATOR_NOT_AVAILABLE when this broker has
// none); INVALID_GROUP_ID for every partition when the group id is empty;
// sent once the group log is durable (ReplyWhenGroupLogCommitted).
// ACLs: READ on the group (else GROUP_AUTHORIZATION_FAILED everywhere,
// nothing committed) and READ on each topic (else TOPIC_AUTHORIZATION_FAILED
// for its partitions); `refused` (TxnOffsetCommit's transactional id check)
// fails every partition with it before anything else.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "broker/api/authorize.h"
#include "broker/api/group_log_wait.h"
#include "broker/api/authorize.h"
#include "broker/api/group_lookup.h"
#include "broker/api/handler.h"
#include "broker/api/partition_checks.h"
#include "broker/coordinator/group/group_coordinator.h"
#include "broker/base/kafka_error.h"

namespace headrace::broker {

// Fills `commit.partitions` from `req.topics` (the committed leader epoch
// only when `with_leader_epoch`), asks `run(groups, commit)` for one error
// per committed partition and replies.
template <typename Resp, typename Req, typename Commit, typename Run>
void AnswerOffsetCommit(BrokerContext& ctx, const Req& req, Request request, Commit& commit,
                        bool with_leader_epoch, Run run, KafkaError refused = KafkaError::kNone) {
  using RespTopic = typename decltype(Resp::topics)::value_type;
  using RespPartition = typename decltype(RespTopic::partitions)::value_type;
  const group::CoordinatorLookup found = GroupCoordinatorFor(ctx, req.group_id);
  const std::shared_ptr<group::GroupCoordinator>& groups = found.coordinator;
  Resp resp;
  if (refused == KafkaError::kNone &&
      !AuthorizedOnGroup(ctx, request, AclOperation::kRead, req.group_id)) {
    refused = KafkaError::kGroupAuthorizationFailed;
  }
  if (refused != KafkaError::kNone) {
    for (const auto& t : req.topics) {
      RespTopic& rt = resp.topics.emplace_back();
      rt.name = t.name;
      for (const auto& p : t.partitions) {
        RespPartition& rp = rt.partitions.emplace_back();
        rp.partition_index = p.partition_index;
        rp.error_code = Code(refused);
      }
    }
    request.Reply(resp);
    return;
  }
  // Where each committed partition's answer goes.
  std::vector<std::pair<size_t, size_t>> slots;
  for (const auto& t : req.topics) {
    RespTopic rt;
    rt.name = t.name;
    const bool readable = AuthorizedOnTopic(ctx, request, AclOperation::kRead, t.name);
    for (const auto& p : t.partitions) {
      RespPartition rp;
      rp.partition_index = p.partition_index;
      if (!readable) {
        rp.error_code = Code(KafkaError::kTopicAuthorizationFailed);
      } else if (!PartitionExists(ctx, t.name, p.partition_index)) {
        rp.error_code = Code(KafkaError::kUnknownTopicOrPartition);
      } else {
        slots.emplace_back(resp.topics.size(), rt.partitions.size());
        commit.partitions.push_back(group::CommitPartition{
            t.name, p.partition_index, p.committed_offset,
            with_leader_epoch ? p.committed_leader_epoch : -1, p.committed_metadata});
      }
      rt.partitions.push_back(rp);
    }
    resp.topics.push_back(std::move(rt));
  }
  if (!commit.partitions.empty() || req.group_id.empty()) {
    std::vector<KafkaError> errors =
        groups ? run(*groups, commit)
               : std::vector<KafkaError>(commit.partitions.size(), found.error);
    for (size_t i = 0; i < slots.size(); ++i)
      resp.topics[slots[i].first].partitions[slots[i].second].error_code = Code(errors[i]);
    if (req.group_id.empty())  // every partition, known topic or not
      for (auto& t : resp.topics)
        for (auto& p : t.partitions) p.error_code = Code(KafkaError::kInvalidGroupId);
  }
  ReplyWhenGroupLogCommitted(ctx, {groups}, std::move(request), std::move(resp), [](Resp& r, KafkaError e) {
    for (auto& t : r.topics)
      for (auto& p : t.partitions)
        if (p.error_code == 0) p.error_code = Code(e);
  });
}

}  // namespace headrace::broker
