// DescribeGroups (key 15), v0..5: state, protocol and members of groups. An
// unknown group is described as Dead with no error (Kafka's classic
// behaviour); member metadata and assignments are given for Stable groups.
// v3+ authorized operations: no ACLs, so every group operation is allowed.
#include <climits>

#include "broker/api/authorize.h"
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
  for (const std::string& id : req.groups) {
    Resp::DescribedGroup out;
    out.group_id = id;
    if (!AuthorizedOnGroup(ctx, request, AclOperation::kDescribe, id)) {
      out.error_code = Code(KafkaError::kGroupAuthorizationFailed);
      out.authorized_operations = INT32_MIN;
      resp.groups.push_back(std::move(out));
      continue;
    }
    const group::CoordinatorLookup found = GroupCoordinatorFor(ctx, id);
    if (found.coordinator == nullptr) {
      out.error_code = Code(found.error);  // NOT_COORDINATOR: this group only
      resp.groups.push_back(std::move(out));
      continue;
    }
    group::GroupDescription d = found.coordinator->Describe(id);
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
    out.authorized_operations =
        req.include_authorized_operations
            ? AuthorizedOperations(ctx, request, ResourceType::kGroup, id,
                                   {AclOperation::kRead, AclOperation::kDelete,
                                    AclOperation::kDescribe})
            : INT32_MIN;
    resp.groups.push_back(std::move(out));
  }
  request.Reply(resp);
}

}  // namespace

extern const ApiHandler kDescribeGroupsHandler =
    MakeHandler<protocol::DescribeGroupsRequest, HandleDescribeGroups>(0, 5);

}  // namespace headrace::broker
