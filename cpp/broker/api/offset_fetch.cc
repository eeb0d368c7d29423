// OffsetFetch (key 9), v0..9: a group's committed offsets (-1 where none).
// v2+ null topics = every committed partition and a top-level error; v8+
// batches groups. require_stable (v7+, KIP-447): a partition some open
// transaction has committed an offset for answers UNSTABLE_OFFSET_COMMIT
// (offset -1) until the transaction ends; the client retries. v9 member
// id/epoch: for a KIP-848 consumer group an unknown member answers
// UNKNOWN_MEMBER_ID and another epoch STALE_MEMBER_EPOCH (group-level
// error); classic groups ignore them.
#include "broker/api/authorize.h"
#include "broker/api/group_lookup.h"
#include "broker/api/handler.h"
#include "broker/coordinator/group/group_coordinator.h"
#include "broker/base/kafka_error.h"

namespace headrace::broker {
namespace {

using Req = protocol::OffsetFetchRequest;
using Resp = protocol::OffsetFetchResponse;
using PartitionList = std::optional<std::vector<group::TopicPartitionKey>>;

template <typename Topics>
PartitionList Wanted(const std::optional<Topics>& topics) {
  if (!topics) return std::nullopt;
  std::vector<group::TopicPartitionKey> out;
  for (const auto& t : *topics)
    for (int32_t p : t.partition_indexes) out.emplace_back(t.name, p);
  return out;
}

// Groups FetchedOffsets by topic (in first-seen order) into `TopicT`s.
template <typename TopicT>
std::vector<TopicT> ByTopic(const std::vector<group::FetchedOffset>& offsets, KafkaError e) {
  std::vector<TopicT> out;
  for (const group::FetchedOffset& f : offsets) {
    if (out.empty() || out.back().name != f.topic) {
      out.emplace_back();
      out.back().name = f.topic;
    }
    auto& p = out.back().partitions.emplace_back();
    p.partition_index = f.partition;
    p.committed_offset = f.committed.offset;
    p.committed_leader_epoch = f.committed.leader_epoch;
    p.metadata = f.committed.metadata.value_or("");
    p.error_code = Code(f.error != KafkaError::kNone ? f.error : e);
  }
  return out;
}

// ACLs: DESCRIBE on the group (else GROUP_AUTHORIZATION_FAILED) and on each
// topic: an asked partition of a topic the client may not describe answers
// TOPIC_AUTHORIZATION_FAILED; "every partition" leaves such topics out.
KafkaError Fetch(BrokerContext& ctx, const Request& request, const std::string& group_id,
                 const PartitionList& wanted, bool require_stable,
                 std::vector<group::FetchedOffset>* out,
                 const std::optional<std::string>& member_id = std::nullopt,
                 int32_t member_epoch = -1) {
  // v8+ batches: each group is answered by its own partition's coordinator
  // (NOT_COORDINATOR for a group another broker coordinates).
  const group::CoordinatorLookup found = GroupCoordinatorFor(ctx, group_id);
  const std::shared_ptr<group::GroupCoordinator>& groups = found.coordinator;
  KafkaError e = KafkaError::kNone;
  if (!AuthorizedOnGroup(ctx, request, AclOperation::kDescribe, group_id)) {
    e = KafkaError::kGroupAuthorizationFailed;
  } else if (groups == nullptr) {
    return found.error;
  } else {
    e = groups->FetchOffsets(group_id, wanted, out, require_stable, member_id, member_epoch);
    std::vector<group::FetchedOffset> kept;
    kept.reserve(out->size());
    for (group::FetchedOffset& f : *out) {
      if (!AuthorizedOnTopic(ctx, request, AclOperation::kDescribe, f.topic)) {
        if (!wanted) continue;
        f = group::FetchedOffset{f.topic, f.partition, {}};
        f.error = KafkaError::kTopicAuthorizationFailed;
      }
      kept.push_back(std::move(f));
    }
    *out = std::move(kept);
  }
  if (e != KafkaError::kNone && wanted) {  // answer each asked partition with -1
    out->clear();
    for (const auto& tp : *wanted) out->push_back(group::FetchedOffset{tp.first, tp.second, {}});
  }
  return e;
}

void HandleOffsetFetch(BrokerContext& ctx, Req& req, Request request) {
  Resp resp;
  const bool require_stable = request.version() >= 7 && req.require_stable;
  if (request.version() >= 8) {
    for (auto& g : req.groups) {
      std::vector<group::FetchedOffset> offsets;
      const bool v9 = request.version() >= 9;
      KafkaError e = Fetch(ctx, request, g.group_id, Wanted(g.topics), require_stable, &offsets,
                           v9 ? g.member_id : std::nullopt, v9 ? g.member_epoch : -1);
      Resp::OffsetFetchResponseGroup rg;
      rg.group_id = g.group_id;
      rg.error_code = Code(e);
      rg.topics = ByTopic<Resp::OffsetFetchResponseTopics>(offsets, KafkaError::kNone);
      resp.groups.push_back(std::move(rg));
    }
    return request.Reply(resp);
  }
  PartitionList wanted = Wanted(req.topics);
  if (request.version() < 2 && !wanted) wanted.emplace();  // null not allowed before v2
  std::vector<group::FetchedOffset> offsets;
  KafkaError e = Fetch(ctx, request, req.group_id, wanted, require_stable, &offsets);
  resp.error_code = Code(e);
  // Before v2 there is no top-level error: each partition carries it.
  resp.topics = ByTopic<Resp::OffsetFetchResponseTopic>(
      offsets, request.version() < 2 ? e : KafkaError::kNone);
  request.Reply(resp);
}

}  // namespace

extern const ApiHandler kOffsetFetchHandler =
    MakeHandler<protocol::OffsetFetchRequest, HandleOffsetFetch>(0, 9);

}  // namespace headrace::broker
