// ShareGroupHeartbeat (key 76), v1 (Kafka 4.1+; v0 was KIP-932's early
// access and is gone): a share group's member joins (epoch 0, with the id
// it generated and its subscribed topics), heartbeats with its epoch and
// leaves (-1); the coordinator answers its epoch, the heartbeat interval
// and, when it changed, the partitions it may fetch
// (coordinator/group/share_group_coordinator.cc, docs/share-groups.md).
// ACLs as Kafka: READ on the group; DESCRIBE on each subscribed topic.
#include "broker/api/authorize.h"
#include "broker/api/client_host.h"
#include "broker/api/group_lookup.h"
#include "broker/api/handler.h"
#include "broker/api/group_topics.h"
#include "broker/base/kafka_error.h"

namespace headrace::broker {
namespace {

using Req = protocol::ShareGroupHeartbeatRequest;
using Resp = protocol::ShareGroupHeartbeatResponse;

void HandleShareGroupHeartbeat(BrokerContext& ctx, Req& req, Request request) {
  Resp resp;
  auto fail = [&](KafkaError e, std::optional<std::string> message = std::nullopt) {
    resp.error_code = Code(e);
    resp.error_message = std::move(message);
    request.Reply(resp);
  };
  if (!AuthorizedOnGroup(ctx, request, AclOperation::kRead, req.group_id)) {
    return fail(KafkaError::kGroupAuthorizationFailed);
  }
  if (req.subscribed_topic_names) {
    for (const std::string& topic : *req.subscribed_topic_names) {
      if (!AuthorizedOnTopic(ctx, request, AclOperation::kDescribe, topic)) {
        return fail(KafkaError::kTopicAuthorizationFailed);
      }
    }
  }
  if (req.member_id.empty()) return fail(KafkaError::kInvalidRequest, "MemberId can't be empty.");
  const group::CoordinatorLookup found = GroupCoordinatorFor(ctx, req.group_id);
  if (found.coordinator == nullptr) return fail(found.error);

  group::ShareHeartbeat hb;
  hb.member_id = req.member_id;
  hb.member_epoch = req.member_epoch;
  hb.rack_id = req.rack_id;
  hb.subscribed_topics = req.subscribed_topic_names;
  hb.client_id = request.header().client_id.value_or("");
  hb.client_host = ClientHost(request.connection().peer);
  const std::map<std::string, group::TopicInfo> topics = ExistingTopics(ctx).All();
  group::ShareHeartbeatResult r = found.coordinator->ShareHeartbeat(req.group_id, hb, SizesOf(topics));
  if (r.error != KafkaError::kNone) {
    return fail(r.error, r.message.empty() ? std::nullopt : std::optional<std::string>(r.message));
  }
  resp.member_id = r.member_id;
  resp.member_epoch = r.member_epoch;
  resp.heartbeat_interval_ms = r.heartbeat_interval_ms;
  if (r.assignment) {
    resp.assignment.emplace();
    for (const auto& [name, parts] : *r.assignment) {
      auto t = topics.find(name);
      if (t == topics.end() || parts.empty()) continue;
      Resp::TopicPartitions tp;
      tp.topic_id = t->second.id;
      tp.partitions.assign(parts.begin(), parts.end());
      resp.assignment->topic_partitions.push_back(std::move(tp));
    }
  }
  request.Reply(resp);
}

}  // namespace

extern const ApiHandler kShareGroupHeartbeatHandler =
    MakeHandler<protocol::ShareGroupHeartbeatRequest, HandleShareGroupHeartbeat>(1, 1);

}  // namespace headrace::broker
