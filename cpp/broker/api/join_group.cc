// JoinGroup (key 11), v0..9: a member (re)joins a classic group; the answer
// comes when the rebalance completes (coordinator/group/group_coordinator.h). v4+
// (KIP-394) a new member first gets MEMBER_ID_REQUIRED with its id; v5+
// static members (group.instance.id); v7+ protocol type in the response;
// v9 skip_assignment for a static leader rejoining a stable group.
#include "broker/api/client_host.h"
#include "broker/api/authorize.h"
#include "broker/api/group_lookup.h"
#include "broker/api/handler.h"
#include "broker/coordinator/group/group_coordinator.h"
#include "broker/base/kafka_error.h"

namespace headrace::broker {
namespace {

using Req = protocol::JoinGroupRequest;
using Resp = protocol::JoinGroupResponse;

Resp ToResponse(const group::JoinResult& r, int16_t version) {
  Resp resp;
  resp.error_code = Code(r.error);
  resp.generation_id = r.generation;
  if (version >= 7 && !r.protocol_type.empty() && r.error == KafkaError::kNone)
    resp.protocol_type = r.protocol_type;
  resp.protocol_name = r.protocol_name;
  if (!resp.protocol_name && version < 7) resp.protocol_name = "";
  resp.leader = r.leader;
  resp.skip_assignment = r.skip_assignment && version >= 9;
  resp.member_id = r.member_id;
  for (const group::JoinedMember& m : r.members) {
    Resp::JoinGroupResponseMember out;
    out.member_id = m.member_id;
    out.group_instance_id = m.instance_id;
    out.metadata = m.metadata;
    resp.members.push_back(std::move(out));
  }
  return resp;
}

void HandleJoinGroup(BrokerContext& ctx, Req& req, Request request) {
  const group::CoordinatorLookup found = GroupCoordinatorFor(ctx, req.group_id);
  const std::shared_ptr<group::GroupCoordinator>& groups = found.coordinator;
  int16_t version = request.version();
  if (!AuthorizedOnGroup(ctx, request, AclOperation::kRead, req.group_id)) {
    group::JoinResult r;
    r.error = KafkaError::kGroupAuthorizationFailed;
    r.member_id = req.member_id;
    return request.Reply(ToResponse(r, version));
  }
  if (groups == nullptr) {
    group::JoinResult r;
    r.error = found.error;
    r.member_id = req.member_id;
    return request.Reply(ToResponse(r, version));
  }
  group::JoinRequest j;
  j.group_id = req.group_id;
  j.member_id = req.member_id;
  j.instance_id = req.group_instance_id;
  j.client_id = request.header().client_id.value_or("");
  j.client_host = ClientHost(request.connection().peer);
  j.session_timeout_ms = req.session_timeout_ms;
  j.rebalance_timeout_ms = version >= 1 ? req.rebalance_timeout_ms : -1;
  j.protocol_type = req.protocol_type;
  for (auto& p : req.protocols) j.protocols.push_back({p.name, p.metadata});
  j.require_known_member_id = version >= 4;
  groups->Join(std::move(j), [request, version](group::JoinResult r) {
    // Completed by whichever thread finished the rebalance: answer on ours.
    request.RunOnLoop([request, version, r = std::move(r)] { request.Reply(ToResponse(r, version)); });
  });
}

}  // namespace

extern const ApiHandler kJoinGroupHandler =
    MakeHandler<protocol::JoinGroupRequest, HandleJoinGroup>(0, 9);

}  // namespace headrace::broker
