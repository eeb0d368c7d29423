// DeleteGroups (key 42), v0..2: deletes Empty groups and their committed
// offsets (tombstones in the group log). NON_EMPTY_GROUP while members
// remain, GROUP_ID_NOT_FOUND for an unknown group, INVALID_GROUP_ID for "".
// A deleted group's group configs (GROUP config resource) are removed too,
// as Kafka does, and a share group's stored share-partition state
// (api/share_state.h; the answer waits for both logs); runs on the admin worker (that removal persists, and in
// cluster mode waits for ZooKeeper).
#include "broker/api/group_log_wait.h"
#include "broker/api/authorize.h"
#include "broker/api/group_config_entries.h"
#include "broker/api/group_lookup.h"
#include "broker/api/handler.h"
#include "broker/api/share_state.h"
#include "broker/coordinator/group/group_coordinator.h"
#include "broker/base/kafka_error.h"
#include "common/logging.h"

namespace headrace::broker {
namespace {

void HandleDeleteGroups(BrokerContext& ctx, protocol::DeleteGroupsRequest& req, Request request) {
  std::vector<std::shared_ptr<group::GroupCoordinator>> touched;
  std::vector<LogCommitPoint> share_state;
  protocol::DeleteGroupsResponse resp;
  for (const std::string& id : req.groups_names) {
    protocol::DeleteGroupsResponse::DeletableGroupResult r;
    r.group_id = id;
    if (!AuthorizedOnGroup(ctx, request, AclOperation::kDelete, id)) {
      r.error_code = Code(KafkaError::kGroupAuthorizationFailed);
    } else if (group::CoordinatorLookup found = GroupCoordinatorFor(ctx, id); found.coordinator) {
      r.error_code = Code(found.coordinator->DeleteGroup(id));
      if (r.error_code == 0) {
        for (LogCommitPoint& p : DeleteShareState(ctx, id)) share_state.push_back(std::move(p));
        if (Status st = RemoveGroupConfigs(ctx, id); !st.ok()) {
          HR_LOG(kWarn) << "DeleteGroups " << id << ": group configs not removed: "
                        << st.message();
        }
      }
      touched.push_back(std::move(found.coordinator));
    } else {
      r.error_code = Code(found.error);  // NOT_COORDINATOR: this group only
    }
    resp.results.push_back(std::move(r));
  }
  std::vector<LogCommitPoint> points = GroupLogEnds(touched);
  for (LogCommitPoint& p : share_state) points.push_back(std::move(p));
  ReplyWhenLogsCommitted(ctx, std::move(points), std::move(request), std::move(resp),
                             [](protocol::DeleteGroupsResponse& r, KafkaError e) {
                               for (auto& g : r.results)
                                 if (g.error_code == 0) g.error_code = Code(e);
                             });
}

}  // namespace

extern const ApiHandler kDeleteGroupsHandler =
    MakeHandler<protocol::DeleteGroupsRequest,
                OnAdminWorker<protocol::DeleteGroupsRequest, HandleDeleteGroups>>(0, 2);

}  // namespace headrace::broker
