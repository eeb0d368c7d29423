// TxnOffsetCommit (key 28), v0..3: a transactional producer's offsets for a
// group, held pending for its producer id until the transaction's marker
// commits or aborts them (GroupCoordinator::CommitTxnOffsets; invisible to
// OffsetFetch until then). Answered once the group log is durable, as
// OffsetCommit. Errors per partition: UNKNOWN_TOPIC_OR_PARTITION for unknown
// topics; INVALID_GROUP_ID for an empty group id (every partition);
// NOT_COORDINATOR when another broker coordinates the group (cluster mode:
// the leader of its __consumer_offsets partition); v3+
// (KIP-447) member checks ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID /
// FENCED_INSTANCE_ID; INVALID_PRODUCER_EPOCH for an epoch older than the
// producer's pending offsets carry; OFFSET_METADATA_TOO_LARGE.
#include "broker/api/offset_commit_answer.h"

namespace headrace::broker {
namespace {

using Req = protocol::TxnOffsetCommitRequest;
using Resp = protocol::TxnOffsetCommitResponse;

void HandleTxnOffsetCommit(BrokerContext& ctx, Req& req, Request request) {
  group::TxnCommitRequest commit;
  commit.transactional_id = req.transactional_id;
  commit.group_id = req.group_id;
  commit.producer_id = req.producer_id;
  commit.producer_epoch = req.producer_epoch;
  if (request.version() >= 3) {
    commit.member_id = req.member_id;
    commit.instance_id = req.group_instance_id;
    commit.generation = req.generation_id;
  }
  const bool with_leader_epoch = request.version() >= 2;
  // ACLs: WRITE on the transactional id first (then the group and topics).
  const KafkaError refused =
      AuthorizedOnTxnId(ctx, request, AclOperation::kWrite, req.transactional_id)
          ? KafkaError::kNone
          : KafkaError::kTransactionalIdAuthorizationFailed;
  AnswerOffsetCommit<Resp>(ctx, req, std::move(request), commit, with_leader_epoch,
                           [](group::GroupCoordinator& g, const group::TxnCommitRequest& c) {
                             return g.CommitTxnOffsets(c);
                           },
                           refused);
}

}  // namespace

extern const ApiHandler kTxnOffsetCommitHandler =
    MakeHandler<protocol::TxnOffsetCommitRequest, HandleTxnOffsetCommit>(0, 3);

}  // namespace headrace::broker
