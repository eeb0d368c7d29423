// OffsetDelete (key 47), v0: removes committed offsets of a group.
// GROUP_ID_NOT_FOUND for an unknown group; per partition
// GROUP_SUBSCRIBED_TO_TOPIC while active members subscribe to the topic;
// UNKNOWN_TOPIC_OR_PARTITION for a partition that does not exist.
#include "broker/api/group_log_wait.h"
#include "broker/api/authorize.h"
#include "broker/api/group_lookup.h"
#include "broker/api/handler.h"
#include "broker/api/partition_checks.h"
#include "broker/coordinator/group/group_coordinator.h"
#include "broker/base/kafka_error.h"

namespace headrace::broker {
namespace {

using Req = protocol::OffsetDeleteRequest;
using Resp = protocol::OffsetDeleteResponse;

void HandleOffsetDelete(BrokerContext& ctx, Req& req, Request request) {
  const group::CoordinatorLookup found = GroupCoordinatorFor(ctx, req.group_id);
  const std::shared_ptr<group::GroupCoordinator>& groups = found.coordinator;
  Resp resp;
  std::vector<group::TopicPartitionKey> wanted;
  std::vector<std::pair<size_t, size_t>> slots;
  // ACLs: DELETE on the group (else GROUP_AUTHORIZATION_FAILED, nothing
  // deleted), READ on each topic (else TOPIC_AUTHORIZATION_FAILED).
  if (!AuthorizedOnGroup(ctx, request, AclOperation::kDelete, req.group_id)) {
    resp.error_code = Code(KafkaError::kGroupAuthorizationFailed);
    request.Reply(resp);
    return;
  }
  for (auto& t : req.topics) {
    Resp::OffsetDeleteResponseTopic rt;
    rt.name = t.name;
    for (auto& p : t.partitions) {
      Resp::OffsetDeleteResponsePartition rp;
      rp.partition_index = p.partition_index;
      if (!AuthorizedOnTopic(ctx, request, AclOperation::kRead, t.name)) {
        rp.error_code = Code(KafkaError::kTopicAuthorizationFailed);
      } else if (!PartitionExists(ctx, t.name, p.partition_index)) {  // the cluster's view
        rp.error_code = Code(KafkaError::kUnknownTopicOrPartition);
      } else {
        slots.emplace_back(resp.topics.size(), rt.partitions.size());
        wanted.emplace_back(t.name, p.partition_index);
      }
      rt.partitions.push_back(rp);
    }
    resp.topics.push_back(std::move(rt));
  }
  std::vector<KafkaError> per_partition;
  KafkaError e = groups ? groups->DeleteOffsets(req.group_id, wanted, &per_partition)
                        : found.error;
  resp.error_code = Code(e);
  if (e != KafkaError::kNone) {
    resp.topics.clear();
  } else {
    for (size_t i = 0; i < slots.size(); ++i)
      resp.topics[slots[i].first].partitions[slots[i].second].error_code = Code(per_partition[i]);
  }
  ReplyWhenGroupLogCommitted(ctx, {groups}, std::move(request), std::move(resp),
                             [](protocol::OffsetDeleteResponse& r, KafkaError e) {
                               if (r.error_code == 0) r.error_code = Code(e);
                             });
}

}  // namespace

extern const ApiHandler kOffsetDeleteHandler =
    MakeHandler<protocol::OffsetDeleteRequest, HandleOffsetDelete>(0, 0);

}  // namespace headrace::broker
