// DeleteGroups (key 42), v0..2: deletes Empty groups and their committed
// offsets (tombstones in the group log). NON_EMPTY_GROUP while members
// remain, GROUP_ID_NOT_FOUND for an unknown group, INVALID_GROUP_ID for "".
#include "broker/api/group_log_wait.h"
#include "broker/api/authorize.h"
#include "broker/api/handler.h"
#include "broker/group/group_coordinator.h"
#include "broker/kafka_error.h"

namespace headrace::broker {
namespace {

void HandleDeleteGroups(BrokerContext& ctx, protocol::DeleteGroupsRequest& req, Request request) {
  const std::shared_ptr<group::GroupCoordinator> groups = ctx.coordinator();
  protocol::DeleteGroupsResponse resp;
  for (const std::string& id : req.groups_names) {
    protocol::DeleteGroupsResponse::DeletableGroupResult r;
    r.group_id = id;
    r.error_code = Code(!AuthorizedOnGroup(ctx, request, AclOperation::kDelete, id)
                            ? KafkaError::kGroupAuthorizationFailed
                        : groups ? groups->DeleteGroup(id)
                                 : KafkaError::kCoordinatorNotAvailable);
    resp.results.push_back(std::move(r));
  }
  ReplyWhenGroupLogCommitted(ctx, std::move(request), std::move(resp),
                             [](protocol::DeleteGroupsResponse& r, KafkaError e) {
                               for (auto& g : r.results)
                                 if (g.error_code == 0) g.error_code = Code(e);
                             });
}

}  // namespace

extern const ApiHandler kDeleteGroupsHandler =
    MakeHandler<protocol::DeleteGroupsRequest, HandleDeleteGroups>(0, 2);

}  // namespace headrace::broker
