// DeleteShareGroupOffsets (key 92), v0 (KIP-932; Kafka's Admin
// deleteShareGroupOffsets, kafka-share-groups --delete-offsets): forgets a
// share group's state of whole topics, so that they start again where
// share.auto.offset.reset says when the group next reads them.
//   - Answered by the group's coordinator. Top-level errors, as Kafka:
//     GROUP_AUTHORIZATION_FAILED without DELETE on the group,
//     NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE elsewhere,
//     NON_EMPTY_GROUP while the share group has members.
//   - Per partition of each topic: TOPIC_AUTHORIZATION_FAILED without READ
//     on the topic, UNKNOWN_TOPIC_OR_PARTITION for an unknown topic (one
//     result, partition -1 — the request names topics only); else the
//     share-partition's stored state is deleted by its share coordinator
//     (api/share_state.h DeleteShareStateOf: in process, or
//     DeleteShareGroupState to another broker), and this broker forgets it.
// The answer is sent once every deletion is committed.
#include <memory>
#include <string>

#include "broker/api/authorize.h"
#include "broker/api/group_lookup.h"
#include "broker/api/group_topics.h"
#include "broker/api/handler.h"
#include "broker/api/share_state.h"
#include "broker/coordinator/group/group_coordinator.h"

namespace headrace::broker {
namespace {

using Req = protocol::DeleteShareGroupOffsetsRequest;
using Resp = protocol::DeleteShareGroupOffsetsResponse;
using Pending = PendingAnswer<Resp>;

void HandleDeleteShareGroupOffsets(BrokerContext& ctx, Req& req, Request request) {
  auto pending = std::make_shared<Pending>(std::move(request));
  const Request& r = pending->req;
  KafkaError refused = KafkaError::kNone;
  if (!AuthorizedOnGroup(ctx, r, AclOperation::kDelete, req.group_id)) {
    refused = KafkaError::kGroupAuthorizationFailed;
  } else if (group::CoordinatorLookup found = GroupCoordinatorFor(ctx, req.group_id);
             found.coordinator == nullptr) {
    refused = found.error;
  } else if (group::ShareGroupDescription d = found.coordinator->DescribeShareGroup(req.group_id);
             d.group && !d.group->members().empty()) {
    refused = KafkaError::kNonEmptyGroup;
  }
  if (refused != KafkaError::kNone) {
    pending->resp.error_code = Code(refused);
    return Pending::Release(pending);
  }
  const auto topics = ExistingTopics(ctx).All();
  struct Part {
    size_t topic, partition;
    share::SharePartitionKey key;
  };
  std::vector<Part> parts;
  for (const auto& t : req.topics) {
    Resp::DeleteShareGroupOffsetsResponseTopic out;
    out.topic_name = t.topic_name;
    auto info = topics.find(t.topic_name);
    KafkaError e = KafkaError::kNone;
    if (!AuthorizedOnTopic(ctx, r, AclOperation::kRead, t.topic_name)) {
      e = KafkaError::kTopicAuthorizationFailed;
    } else if (info == topics.end()) {
      e = KafkaError::kUnknownTopicOrPartition;
    }
    if (e != KafkaError::kNone) {
      auto& rp = out.partitions.emplace_back();
      rp.partition_index = -1;
      rp.error_code = Code(e);
    } else {
      out.topic_id = info->second.id;
      for (int32_t p = 0; p < info->second.partitions; ++p) {
        parts.push_back({pending->resp.responses.size(), out.partitions.size(),
                         {req.group_id, info->second.id, p}});
        out.partitions.emplace_back().partition_index = p;
      }
    }
    pending->resp.responses.push_back(std::move(out));
  }
  pending->Hold(parts.size());
  for (const Part& p : parts) {
    DeleteShareStateOf(ctx, p.key, Pending::Part(pending, [p](Resp& r, KafkaError e) {
      r.responses[p.topic].partitions[p.partition].error_code = Code(e);
    }));
  }
  Pending::Release(pending);
}

}  // namespace

extern const ApiHandler kDeleteShareGroupOffsetsHandler =
    MakeHandler<protocol::DeleteShareGroupOffsetsRequest, HandleDeleteShareGroupOffsets>(0, 0);

}  // namespace headrace::broker
