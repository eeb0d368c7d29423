// LeaveGroup (key 13), v0..5: members leave; the rest rebalance. v0..2 name
// one member; v3+ batch members (by member id or group.instance.id) and
// answer per member.
#include "broker/api/authorize.h"
#include "broker/api/group_lookup.h"
#include "broker/api/handler.h"
#include "broker/coordinator/group/group_coordinator.h"
#include "broker/base/kafka_error.h"

namespace headrace::broker {
namespace {

using Req = protocol::LeaveGroupRequest;
using Resp = protocol::LeaveGroupResponse;

void HandleLeaveGroup(BrokerContext& ctx, Req& req, Request request) {
  const group::CoordinatorLookup found = GroupCoordinatorFor(ctx, req.group_id);
  const std::shared_ptr<group::GroupCoordinator>& groups = found.coordinator;
  Resp resp;
  bool batched = request.version() >= 3;
  std::vector<group::LeaveMember> members;
  if (batched) {
    for (auto& m : req.members) members.push_back({m.member_id, m.group_instance_id});
  } else {
    members.push_back({req.member_id, std::nullopt});
  }
  if (!AuthorizedOnGroup(ctx, request, AclOperation::kRead, req.group_id)) {
    resp.error_code = Code(KafkaError::kGroupAuthorizationFailed);
    return request.Reply(resp);
  }
  if (groups == nullptr) {
    resp.error_code = Code(found.error);
    return request.Reply(resp);
  }
  auto [group_error, per_member] = groups->Leave(req.group_id, members);
  resp.error_code = Code(group_error);
  if (group_error == KafkaError::kNone) {
    if (!batched) {
      resp.error_code = Code(per_member.at(0));
    } else {
      for (size_t i = 0; i < members.size(); ++i) {
        Resp::MemberResponse m;
        m.member_id = members[i].member_id;
        m.group_instance_id = members[i].instance_id;
        m.error_code = Code(per_member[i]);
        resp.members.push_back(std::move(m));
      }
    }
  }
  request.Reply(resp);
}

}  // namespace

extern const ApiHandler kLeaveGroupHandler =
    MakeHandler<protocol::LeaveGroupRequest, HandleLeaveGroup>(0, 5);

}  // namespace headrace::broker
