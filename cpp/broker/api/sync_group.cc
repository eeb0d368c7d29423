// SyncGroup (key 14), v0..5: the leader hands out the assignment computed by
// its client-side assignor; every member waits for its share. v5+ names the
// protocol type and name (checked against the group's).
#include "broker/api/authorize.h"
#include "broker/api/group_lookup.h"
#include "broker/api/handler.h"
#include "broker/coordinator/group/group_coordinator.h"
#include "broker/base/kafka_error.h"

namespace headrace::broker {
namespace {

using Req = protocol::SyncGroupRequest;
using Resp = protocol::SyncGroupResponse;

Resp ToResponse(const group::SyncResult& r, int16_t version) {
  Resp resp;
  resp.error_code = Code(r.error);
  if (version >= 5 && r.error == KafkaError::kNone) {
    resp.protocol_type = r.protocol_type;
    resp.protocol_name = r.protocol_name;
  }
  resp.assignment = r.assignment;
  return resp;
}

void HandleSyncGroup(BrokerContext& ctx, Req& req, Request request) {
  int16_t version = request.version();
  const group::CoordinatorLookup found = GroupCoordinatorFor(ctx, req.group_id);
  const std::shared_ptr<group::GroupCoordinator>& groups = found.coordinator;
  if (!AuthorizedOnGroup(ctx, request, AclOperation::kRead, req.group_id)) {
    group::SyncResult r;
    r.error = KafkaError::kGroupAuthorizationFailed;
    return request.Reply(ToResponse(r, version));
  }
  if (groups == nullptr) {
    group::SyncResult r;
    r.error = found.error;
    return request.Reply(ToResponse(r, version));
  }
  group::SyncRequest s;
  s.group_id = req.group_id;
  s.member_id = req.member_id;
  s.instance_id = req.group_instance_id;
  s.generation = req.generation_id;
  s.protocol_type = req.protocol_type;
  s.protocol_name = req.protocol_name;
  for (auto& a : req.assignments) s.assignments.emplace_back(a.member_id, a.assignment);
  groups->Sync(std::move(s), [request, version](group::SyncResult r) {
    // Completed by whichever thread finished the rebalance: answer on ours.
    request.RunOnLoop([request, version, r = std::move(r)] { request.Reply(ToResponse(r, version)); });
  });
}

}  // namespace

extern const ApiHandler kSyncGroupHandler =
    MakeHandler<protocol::SyncGroupRequest, HandleSyncGroup>(0, 5);

}  // namespace headrace::broker
