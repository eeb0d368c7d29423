// ShareGroupDescribe (key 77), v1: share groups with their epochs, the
// assignor ("simple") and members (subscriptions and assignments). A group
// that does not exist or is of another kind answers GROUP_ID_NOT_FOUND.
// ACLs as Kafka: DESCRIBE on the group.
#include "broker/api/group_lookup.h"
#include "broker/api/handler.h"
#include "broker/api/group_topics.h"
#include "broker/base/kafka_error.h"

namespace headrace::broker {
namespace {

using Req = protocol::ShareGroupDescribeRequest;
using Resp = protocol::ShareGroupDescribeResponse;

Resp::Assignment ToAssignment(const group::SharePartitions& tps,
                              const std::map<std::string, group::TopicInfo>& topics) {
  Resp::Assignment a;
  for (const auto& [name, parts] : tps) {
    Resp::TopicPartitions tp;
    auto t = topics.find(name);
    if (t != topics.end()) tp.topic_id = t->second.id;
    tp.topic_name = name;
    tp.partitions.assign(parts.begin(), parts.end());
    a.topic_partitions.push_back(std::move(tp));
  }
  return a;
}

void HandleShareGroupDescribe(BrokerContext& ctx, Req& req, Request request) {
  Resp resp;
  std::optional<std::map<std::string, group::TopicInfo>> topics;  // read once, if needed
  DescribeEachGroup(ctx, request, req.group_ids, resp.groups,
                    [&](Resp::DescribedGroup& out, group::GroupCoordinator& coordinator) {
    group::ShareGroupDescription d = coordinator.DescribeShareGroup(out.group_id);
    out.error_code = Code(d.error);
    out.error_message = d.error_message;
    if (!d.group) return;
    if (!topics) topics = ExistingTopics(ctx).All();
    const group::ShareGroup& g = *d.group;
    out.group_state = g.StateName();
    out.group_epoch = g.group_epoch();
    out.assignment_epoch = g.assignment_epoch();
    out.assignor_name = "simple";
    for (const auto& [member_id, m] : g.members()) {
      Resp::Member rm;
      rm.member_id = member_id;
      rm.rack_id = m.rack_id;
      rm.member_epoch = m.member_epoch;
      rm.client_id = m.client_id;
      rm.client_host = m.client_host;
      rm.subscribed_topic_names = m.subscribed_topics;
      rm.assignment = ToAssignment(m.assigned, *topics);
      out.members.push_back(std::move(rm));
    }
    if (req.include_authorized_operations) {
      out.authorized_operations =
          AuthorizedOperations(ctx, request, ResourceType::kGroup, out.group_id,
                               {AclOperation::kRead, AclOperation::kDelete,
                                AclOperation::kDescribe});
    }
  });
  request.Reply(resp);
}

}  // namespace

extern const ApiHandler kShareGroupDescribeHandler =
    MakeHandler<protocol::ShareGroupDescribeRequest, HandleShareGroupDescribe>(1, 1);

}  // namespace headrace::broker
