// ConsumerGroupDescribe (key 69), v0: KIP-848 consumer groups with their
// epochs, assignor and members (current and target assignments). A group
// that does not exist or is a classic group answers GROUP_ID_NOT_FOUND (the
// admin client then falls back to DescribeGroups). ACLs as Kafka: DESCRIBE
// on the group.
#include "broker/api/group_lookup.h"
#include "broker/api/handler.h"
#include "broker/coordinator/group/group_coordinator.h"
#include "broker/base/kafka_error.h"

namespace headrace::broker {
namespace {

using Req = protocol::ConsumerGroupDescribeRequest;
using Resp = protocol::ConsumerGroupDescribeResponse;

Resp::Assignment ToAssignment(const group::TopicPartitions& tps,
                              const std::map<std::string, Uuid>& ids) {
  Resp::Assignment a;
  for (const auto& [name, parts] : tps) {
    Resp::TopicPartitions tp;
    auto id = ids.find(name);
    if (id != ids.end()) tp.topic_id = id->second;
    tp.topic_name = name;
    tp.partitions.assign(parts.begin(), parts.end());
    a.topic_partitions.push_back(std::move(tp));
  }
  return a;
}

void HandleConsumerGroupDescribe(BrokerContext& ctx, Req& req, Request request) {
  Resp resp;
  DescribeEachGroup(ctx, request, req.group_ids, resp.groups,
                    [&](Resp::DescribedGroup& out, group::GroupCoordinator& coordinator) {
    group::ConsumerGroupDescription d = coordinator.DescribeConsumerGroup(out.group_id);
    out.error_code = Code(d.error);
    out.error_message = d.error_message;
    if (d.error != KafkaError::kNone) return;
    out.group_state = d.state;
    out.group_epoch = d.group_epoch;
    out.assignment_epoch = d.assignment_epoch;
    out.assignor_name = d.assignor;
    for (const auto& dm : d.members) {
      const group::ConsumerMember& m = dm.member;
      Resp::Member rm;
      rm.member_id = m.member_id;
      rm.instance_id = m.instance_id;
      rm.rack_id = m.rack_id;
      rm.member_epoch = m.member_epoch;
      rm.client_id = m.client_id;
      rm.client_host = m.client_host;
      rm.subscribed_topic_names = m.subscribed_topics;
      rm.subscribed_topic_regex = m.subscribed_regex;
      rm.assignment = ToAssignment(m.assigned, d.topic_ids);
      rm.target_assignment = ToAssignment(dm.target, d.topic_ids);
      out.members.push_back(std::move(rm));
    }
    if (req.include_authorized_operations) {
      out.authorized_operations = AuthorizedOperations(
          ctx, request, ResourceType::kGroup, out.group_id,
          {AclOperation::kRead, AclOperation::kDelete, AclOperation::kDescribe,
           AclOperation::kDescribeConfigs, AclOperation::kAlterConfigs});
    }
  });
  request.Reply(resp);
}

}  // namespace

extern const ApiHandler kConsumerGroupDescribeHandler =
    MakeHandler<protocol::ConsumerGroupDescribeRequest, HandleConsumerGroupDescribe>(0, 0);

}  // namespace headrace::broker
