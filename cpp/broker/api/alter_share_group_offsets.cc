// AlterShareGroupOffsets (key 91), v0 (KIP-932; Kafka's Admin
// alterShareGroupOffsets, kafka-share-groups --reset-offsets, headrace
// share-group reset): sets share-partitions' start offsets.
//   - Answered by the group's coordinator; the pinned v0 has no top-level
//     error, so a refusal of the whole request is every partition's error:
//     GROUP_AUTHORIZATION_FAILED without READ on the group,
//     NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE elsewhere,
//     NON_EMPTY_GROUP while the share group has members (as Kafka: only an
//     empty or unknown group's offsets are altered).
//   - Per partition: TOPIC_AUTHORIZATION_FAILED without READ on the topic,
//     UNKNOWN_TOPIC_OR_PARTITION, INVALID_REQUEST for a negative offset;
//     else the share-partition starts over at the offset with no in-flight
//     records under a new state epoch (api/share_state.h ResetShareState):
//     its share coordinator stores it, in process or by
//     InitializeShareGroupState on another broker. A leader elsewhere that
//     still holds the old state is fenced at its next write and reads the
//     new one; this broker forgets it at once.
// The answer is sent once every partition's new state is committed.
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

using Req = protocol::AlterShareGroupOffsetsRequest;
using Resp = protocol::AlterShareGroupOffsetsResponse;
using Pending = PendingAnswer<Resp>;

// Why the whole request is refused (kNone: go on).
KafkaError RefuseGroup(BrokerContext& ctx, const Request& r, const std::string& group) {
  if (!AuthorizedOnGroup(ctx, r, AclOperation::kRead, group)) {
    return KafkaError::kGroupAuthorizationFailed;
  }
  group::CoordinatorLookup found = GroupCoordinatorFor(ctx, group);
  if (found.coordinator == nullptr) return found.error;
  group::ShareGroupDescription d = found.coordinator->DescribeShareGroup(group);
  if (d.group && !d.group->members().empty()) return KafkaError::kNonEmptyGroup;
  return KafkaError::kNone;
}

void HandleAlterShareGroupOffsets(BrokerContext& ctx, Req& req, Request request) {
  auto pending = std::make_shared<Pending>(std::move(request));
  const Request& r = pending->req;
  const KafkaError refused = RefuseGroup(ctx, r, req.group_id);
  const auto topics = ExistingTopics(ctx).All();
  struct Part {
    size_t topic, partition;
    share::SharePartitionKey key;
    int64_t start;
  };
  std::vector<Part> parts;
  for (const auto& t : req.topics) {
    Resp::AlterShareGroupOffsetsResponseTopic out;
    out.topic_name = t.topic_name;
    auto info = topics.find(t.topic_name);
    if (info != topics.end()) out.topic_id = info->second.id;
    const bool allowed = AuthorizedOnTopic(ctx, r, AclOperation::kRead, t.topic_name);
    for (const auto& p : t.partitions) {
      Resp::AlterShareGroupOffsetsResponsePartition rp;
      rp.partition_index = p.partition_index;
      KafkaError e = refused;
      if (e != KafkaError::kNone) {
      } else if (!allowed) {
        e = KafkaError::kTopicAuthorizationFailed;
      } else if (info == topics.end() || p.partition_index < 0 ||
                 p.partition_index >= info->second.partitions) {
        e = KafkaError::kUnknownTopicOrPartition;
      } else if (p.start_offset < 0) {
        e = KafkaError::kInvalidRequest;
        rp.error_message = "The start offset must not be negative.";
      } else {
        parts.push_back({pending->resp.responses.size(), out.partitions.size(),
                         {req.group_id, info->second.id, p.partition_index}, p.start_offset});
      }
      rp.error_code = Code(e);
      out.partitions.push_back(std::move(rp));
    }
    pending->resp.responses.push_back(std::move(out));
  }
  pending->Hold(parts.size());
  for (const Part& p : parts) {
    ResetShareState(ctx, p.key, p.start, Pending::Part(pending, [p](Resp& r, KafkaError e) {
      r.responses[p.topic].partitions[p.partition].error_code = Code(e);
    }));
  }
  Pending::Release(pending);
}

}  // namespace

extern const ApiHandler kAlterShareGroupOffsetsHandler =
    MakeHandler<protocol::AlterShareGroupOffsetsRequest, HandleAlterShareGroupOffsets>(0, 0);

}  // namespace headrace::broker
