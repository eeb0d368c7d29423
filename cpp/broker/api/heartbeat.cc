// Heartbeat (key 12), v0..4: keeps a member's session alive. Answers
// REBALANCE_IN_PROGRESS while the group prepares a rebalance (the member must
// rejoin), UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID.
#include "broker/api/authorize.h"
#include "broker/api/group_lookup.h"
#include "broker/api/handler.h"
#include "broker/coordinator/group/group_coordinator.h"
#include "broker/base/kafka_error.h"

namespace headrace::broker {
namespace {

void HandleHeartbeat(BrokerContext& ctx, protocol::HeartbeatRequest& req, Request request) {
  const group::CoordinatorLookup found = GroupCoordinatorFor(ctx, req.group_id);
  const std::shared_ptr<group::GroupCoordinator>& groups = found.coordinator;
  protocol::HeartbeatResponse resp;
  KafkaError e = !AuthorizedOnGroup(ctx, request, AclOperation::kRead, req.group_id)
                     ? KafkaError::kGroupAuthorizationFailed
                 : groups == nullptr
                     ? found.error
                     : groups->Heartbeat(req.group_id, req.member_id, req.group_instance_id,
                                             req.generation_id);
  resp.error_code = Code(e);
  request.Reply(resp);
}

}  // namespace

extern const ApiHandler kHeartbeatHandler =
    MakeHandler<protocol::HeartbeatRequest, HandleHeartbeat>(0, 4);

}  // namespace headrace::broker
