// DescribeGroups (key 15), v0..5: state, protocol and members of groups. An
// unknown group is described as Dead with no error (Kafka's classic
// behaviour); member metadata and assignments are given for Stable groups.
// ACLs as Kafka: DESCRIBE on the group; v3+ authorized operations from them.
#include "broker/api/group_lookup.h"
#include "broker/api/handler.h"
#include "broker/coordinator/group/group_coordinator.h"
#include "broker/base/kafka_error.h"

namespace headrace::broker {
namespace {

using Req = protocol::DescribeGroupsRequest;
using Resp = protocol::DescribeGroupsResponse;

void HandleDescribeGroups(BrokerContext& ctx, Req& req, Request request) {
  Resp resp;
  DescribeEachGroup(ctx, request, req.groups, resp.groups,
                    [&](Resp::DescribedGroup& out, group::GroupCoordinator& coordinator) {
    group::GroupDescription d = coordinator.Describe(out.group_id);
    out.error_code = Code(d.error);
    out.group_state = group::GroupStateName(d.state);
    out.protocol_type = d.protocol_type;
    out.protocol_data = d.protocol;
    for (group::DescribedMember& m : d.members) {
      Resp::DescribedGroupMember dm;
      dm.member_id = m.member_id;
      dm.group_instance_id = m.instance_id;
      dm.client_id = m.client_id;
      dm.client_host = m.client_host;
      dm.member_metadata = std::move(m.metadata);
      dm.member_assignment = std::move(m.assignment);
      out.members.push_back(std::move(dm));
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

extern const ApiHandler kDescribeGroupsHandler =
    MakeHandler<protocol::DescribeGroupsRequest, HandleDescribeGroups>(0, 5);

}  // namespace headrace::broker
