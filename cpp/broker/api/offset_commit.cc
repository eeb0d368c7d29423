// OffsetCommit (key 8), v0..9: stores a group's committed offsets, durably
// (coordinator/base/group_log.h; answered after the fsync unless
// headrace.offsets.commit.fsync=false). A simple consumer (generation -1,
// empty member id) may commit while the group has no members. Partitions of
// unknown topics get UNKNOWN_TOPIC_OR_PARTITION. v1 commit timestamps and
// v2..4 retention times are accepted and ignored (offsets.retention.minutes
// applies). For a KIP-848 consumer group the generation is the member epoch
// (v9): UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH, UNSUPPORTED_VERSION below v9.
#include "broker/api/offset_commit_answer.h"

namespace headrace::broker {
namespace {

using Req = protocol::OffsetCommitRequest;
using Resp = protocol::OffsetCommitResponse;

void HandleOffsetCommit(BrokerContext& ctx, Req& req, Request request) {
  group::CommitRequest commit;
  commit.group_id = req.group_id;
  commit.member_id = req.member_id;
  commit.instance_id = req.group_instance_id;
  commit.generation = request.version() >= 1 ? req.generation_id_or_member_epoch : -1;
  commit.api_version = request.version();
  AnswerOffsetCommit<Resp>(ctx, req, std::move(request), commit, true,
                           [](group::GroupCoordinator& g, const group::CommitRequest& c) {
                             return g.Commit(c);
                           });
}

}  // namespace

extern const ApiHandler kOffsetCommitHandler =
    MakeHandler<protocol::OffsetCommitRequest, HandleOffsetCommit>(0, 9);

}  // namespace headrace::broker
