// ConsumerGroupHeartbeat (key 68), v0 (Kafka 3.9) and v1 (Kafka 4.0: adds
// SubscribedTopicRegex; librdkafka >= 2.10 sends only v1): the KIP-848
// consumer group protocol. A member joins (epoch 0), heartbeats with its
// epoch and owned partitions, and leaves (-1; -2 for a static member that
// will come back); the coordinator answers its epoch, the heartbeat
// interval and, when it changed, the partitions it may use
// (coordinator/group/consumer_group_coordinator.cc, docs/consumer-groups.md).
#include "broker/api/client_host.h"
#include "broker/api/authorize.h"
#include "broker/api/group_lookup.h"
#include "broker/api/group_topics.h"
#include "broker/api/handler.h"
#include "broker/coordinator/group/group_coordinator.h"
#include "broker/base/kafka_error.h"

namespace headrace::broker {
namespace {

using Req = protocol::ConsumerGroupHeartbeatRequest;
using Resp = protocol::ConsumerGroupHeartbeatResponse;

void HandleConsumerGroupHeartbeat(BrokerContext& ctx, Req& req, Request request) {
  const group::CoordinatorLookup found = GroupCoordinatorFor(ctx, req.group_id);
  const std::shared_ptr<group::GroupCoordinator>& groups = found.coordinator;
  Resp resp;
  if (!AuthorizedOnGroup(ctx, request, AclOperation::kRead, req.group_id)) {
    resp.error_code = Code(KafkaError::kGroupAuthorizationFailed);
    return request.Reply(resp);
  }
  // ACLs: a member may not subscribe to topics it may not DESCRIBE (Kafka).
  if (req.subscribed_topic_names) {
    for (const std::string& topic : *req.subscribed_topic_names) {
      if (!AuthorizedOnTopic(ctx, request, AclOperation::kDescribe, topic)) {
        resp.error_code = Code(KafkaError::kTopicAuthorizationFailed);
        return request.Reply(resp);
      }
    }
  }
  if (groups == nullptr) {
    resp.error_code = Code(found.error);
    return request.Reply(resp);
  }
  group::ConsumerHeartbeatRequest hb;
  hb.group_id = req.group_id;
  hb.member_id = req.member_id;
  hb.member_epoch = req.member_epoch;
  hb.instance_id = req.instance_id;
  hb.rack_id = req.rack_id;
  hb.rebalance_timeout_ms = req.rebalance_timeout_ms;
  hb.subscribed_topic_names = req.subscribed_topic_names;
  hb.server_assignor = req.server_assignor;
  if (request.version() >= 1) hb.subscribed_topic_regex = req.subscribed_topic_regex;
  if (req.topic_partitions) {
    hb.owned.emplace();
    for (const auto& tp : *req.topic_partitions) hb.owned->emplace_back(tp.topic_id, tp.partitions);
  }
  hb.client_id = request.header().client_id.value_or("");
  hb.client_host = ClientHost(request.connection().peer);
  const ExistingTopics existing(ctx);
  group::ConsumerHeartbeatResult r = groups->ConsumerHeartbeat(
      hb, [&existing](const std::string& name) { return existing.Find(name); },
      [&existing] { return existing.Names(); });
  resp.error_code = Code(r.error);
  resp.error_message = r.error_message;
  if (r.error == KafkaError::kNone) {
    resp.member_id = r.member_id;
    resp.member_epoch = r.member_epoch;
    resp.heartbeat_interval_ms = r.heartbeat_interval_ms;
    if (r.assignment) {
      resp.assignment.emplace();
      for (auto& [id, parts] : *r.assignment) {
        Resp::TopicPartitions tp;
        tp.topic_id = id;
        tp.partitions = std::move(parts);
        resp.assignment->topic_partitions.push_back(std::move(tp));
      }
    }
  }
  request.Reply(resp);
}

}  // namespace

extern const ApiHandler kConsumerGroupHeartbeatHandler =
    MakeHandler<protocol::ConsumerGroupHeartbeatRequest, HandleConsumerGroupHeartbeat>(0, 1);

}  // namespace headrace::broker
