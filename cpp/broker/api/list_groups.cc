// ListGroups (key 16), v0..5: every group this node coordinates (including
// Empty ones that only hold offsets). v4+ filters by state
// (case-insensitive, each group's state under its own protocol: classic
// Empty/PreparingRebalance/CompletingRebalance/Stable, consumer
// Empty/Assigning/Reconciling/Stable); v5+ by type ("classic",
// "consumer", case-insensitive).
#include <algorithm>
#include <cctype>
#include <iterator>
#include <map>

#include "broker/api/authorize.h"
#include "broker/api/group_lookup.h"
#include "broker/api/handler.h"
#include "broker/coordinator/group/group_coordinator.h"
#include "broker/base/kafka_error.h"

namespace headrace::broker {
namespace {

using Req = protocol::ListGroupsRequest;
using Resp = protocol::ListGroupsResponse;

bool WantsType(const std::vector<std::string>& types, const std::string& type) {
  if (types.empty()) return true;
  return std::any_of(types.begin(), types.end(), [&](std::string t) {
    for (char& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return t == type;
  });
}

void HandleListGroups(BrokerContext& ctx, Req& req, Request request) {
  // The groups of every partition coordinated here. A cluster member
  // coordinating none answers an empty list (as Kafka); a single node
  // without its coordinator (stopping) COORDINATOR_NOT_AVAILABLE.
  std::map<int32_t, std::shared_ptr<group::GroupCoordinator>> coordinators;
  if (ctx.group_coordinators) coordinators = ctx.group_coordinators->All();
  Resp resp;
  if (coordinators.empty() && (ctx.group_coordinators == nullptr || ctx.state->cluster() == nullptr)) {
    resp.error_code = Code(KafkaError::kCoordinatorNotAvailable);
    return request.Reply(resp);
  }
  std::vector<std::string> states;
  if (request.version() >= 4) states = req.states_filter;
  // ACLs: DESCRIBE on the CLUSTER lists every group; otherwise only the
  // groups the client may DESCRIBE (no error, as Kafka).
  const bool all = AuthorizedOnCluster(ctx, request, AclOperation::kDescribe);
  std::vector<group::GroupListing> listed;
  for (const auto& [partition, groups] : coordinators) {
    std::vector<group::GroupListing> some = groups->ListGroups(states);
    listed.insert(listed.end(), std::make_move_iterator(some.begin()),
                  std::make_move_iterator(some.end()));
  }
  for (const group::GroupListing& g : listed) {
    if (request.version() >= 5 && !WantsType(req.types_filter, g.type)) continue;
    if (!all && !AuthorizedOnGroup(ctx, request, AclOperation::kDescribe, g.group_id)) continue;
    Resp::ListedGroup out;
    out.group_id = g.group_id;
    out.protocol_type = g.protocol_type;
    out.group_state = g.state;
    out.group_type = g.type;
    resp.groups.push_back(std::move(out));
  }
  request.Reply(resp);
}

}  // namespace

extern const ApiHandler kListGroupsHandler =
    MakeHandler<protocol::ListGroupsRequest, HandleListGroups>(0, 5);

}  // namespace headrace::broker
