// ShareAcknowledge (key 79), v1-2 (Kafka 4.1+/4.2; KIP-932,
// docs/share-groups.md): a share consumer acknowledges records it acquired
// from this leader without fetching more.
//   - READ on the group (else GROUP_AUTHORIZATION_FAILED, top level); an
//     empty group or member id is INVALID_REQUEST;
//   - the share session step (share/share_session.h): epoch 0 is
//     INVALID_SHARE_SESSION_EPOCH (a session is opened by ShareFetch), N > 0
//     must be the session's next epoch, -1 closes the session after the
//     acknowledgements and releases the member's other acquired records;
//   - per partition, its batches in order (api/share_partition_ops.h):
//     INVALID_RECORD_STATE when an offset is not acquired by the member
//     under a live lock, INVALID_REQUEST for a malformed batch, READ on the
//     topic (TOPIC_AUTHORIZATION_FAILED), NOT_LEADER_OR_FOLLOWER with
//     CurrentLeader / NodeEndpoints (KIP-951) in cluster mode;
//   - v2 IsRenewAck: the batches may carry RENEW (4), as on any version;
//     AcquisitionLockTimeoutMs tells the renewed lock's duration;
//   - answered once the share-partitions' new state is committed by their
//     share coordinator (api/share_state.h); if that fails, the
//     partitions answer REQUEST_TIMED_OUT or KAFKA_STORAGE_ERROR.
#include <map>
#include <string>
#include <vector>

#include "broker/api/authorize.h"
#include "broker/api/cluster_lookup.h"
#include "broker/api/handler.h"
#include "broker/api/share_partition_ops.h"
#include "broker/api/share_state.h"
#include "broker/base/kafka_error.h"
#include "broker/share/share_session.h"

namespace headrace::broker {
namespace {

using Req = protocol::ShareAcknowledgeRequest;
using Resp = protocol::ShareAcknowledgeResponse;

void HandleShareAcknowledge(BrokerContext& ctx, Req& request, Request req) {
  Resp resp;
  const std::string group = request.group_id.value_or("");
  const std::string member = request.member_id.value_or("");
  resp.acquisition_lock_timeout_ms = SharePartitionConfigOf(ctx, group).record_lock_duration_ms;
  if (ShareRefusal no = CheckShareMember(ctx, req, group, member); no.error != KafkaError::kNone) {
    return ReplyRefusal(req, std::move(resp), std::move(no));
  }
  const int32_t epoch = request.share_session_epoch;
  share::SessionUpdate session = ctx.share_sessions->OnAcknowledge(group, member, epoch);
  if (session.outcome != share::SessionOutcome::kOk) {
    return ReplyRefusal(req, std::move(resp), {ShareSessionError(session.outcome)});
  }
  std::map<Uuid, std::string> names;
  ShareWaits waits;
  for (const auto& t : request.topics) {
    auto& topic = resp.responses.emplace_back();
    topic.topic_id = t.topic_id;
    for (const auto& p : t.partitions) {
      ShareTarget target = ResolveShareTarget(ctx, req, t.topic_id, p.partition_index);
      if (!target.topic.empty()) names[t.topic_id] = target.topic;
      std::vector<AckBatch> batches;
      for (const auto& b : p.acknowledgement_batches) {
        batches.push_back({b.first_offset, b.last_offset, b.acknowledge_types});
      }
      auto& out = topic.partitions.emplace_back();
      out.partition_index = p.partition_index;
      out.error_code = Code(ApplyAcknowledgements(ctx, group, member, target, batches, &waits));
    }
  }
  if (epoch == -1) ctx.share_partitions->ReleaseMember(group, member);
  AddLeaderHints(ctx, &resp, [&](const Resp::ShareAcknowledgeTopicResponse& t) {
    auto it = names.find(t.topic_id);
    return it == names.end() ? std::string() : it->second;
  });
  ReplyWhenShareStateDone(ctx, std::move(waits), std::move(req), std::move(resp),
                         [](Resp& r, KafkaError e) {
                           for (auto& t : r.responses)
                             for (auto& p : t.partitions)
                               if (p.error_code == 0) p.error_code = Code(e);
                         });
}

}  // namespace

extern const ApiHandler kShareAcknowledgeHandler =
    MakeHandler<protocol::ShareAcknowledgeRequest, HandleShareAcknowledge>(1, 2);

}  // namespace headrace::broker
