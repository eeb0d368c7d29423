// DescribeShareGroupOffsets (key 90), v0 (KIP-932; Kafka's Admin
// listShareGroupOffsets, kafka-share-groups --describe): per group, the
// share-partition start offset (SPSO) of each partition the group reads,
// from the share coordinator of each share-partition (api/share_state.h:
// in process, or ReadShareGroupStateSummary to another broker).
//   - Answered by the group's coordinator (else NOT_COORDINATOR per group);
//     DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED) and on each topic
//     (TOPIC_AUTHORIZATION_FAILED per partition).
//   - Topics null: the topics the group's members subscribed to since the
//     group was created on this coordinator, and those with state on this
//     broker's share coordinators (all of them on a single node), every
//     partition. A group that is not a share group and
//     has no state: GROUP_ID_NOT_FOUND.
//   - A partition never read by the group: start offset -1 (as Kafka); an
//     unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION; a coordinator
//     that cannot be asked its error (COORDINATOR_NOT_AVAILABLE, ...).
// The answer waits for the remote reads (each within the share-state
// client's timeout) and is sent on the request's I/O thread.
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "broker/api/authorize.h"
#include "broker/api/group_lookup.h"
#include "broker/api/group_topics.h"
#include "broker/api/handler.h"
#include "broker/api/share_state.h"
#include "broker/coordinator/group/group_coordinator.h"
#include "broker/coordinator/share/share_coordinators.h"

namespace headrace::broker {
namespace {

using Req = protocol::DescribeShareGroupOffsetsRequest;
using Resp = protocol::DescribeShareGroupOffsetsResponse;

using Pending = PendingAnswer<Resp>;

// The topic names of `group`'s stored states on this broker's coordinators.
std::set<std::string> StoredTopics(BrokerContext& ctx, const std::string& group,
                                   const std::map<std::string, group::TopicInfo>& topics) {
  std::set<std::string> out;
  if (ctx.share_coordinators == nullptr) return out;
  std::map<Uuid, std::string> by_id;
  for (const auto& [name, t] : topics) by_id[t.id] = name;
  for (const auto& [p, c] : ctx.share_coordinators->All()) {
    for (const auto& [key, state] : c->StatesOf(group)) {
      auto it = by_id.find(key.topic_id);
      if (it != by_id.end()) out.insert(it->second);
    }
  }
  return out;
}

void HandleDescribeShareGroupOffsets(BrokerContext& ctx, Req& req, Request request) {
  // Owned by the reads' callbacks until the last one replies.
  auto pending = std::make_shared<Pending>(std::move(request));
  const Request& r = pending->req;
  const std::map<std::string, group::TopicInfo> topics = ExistingTopics(ctx).All();
  struct Slot {
    size_t group, topic, partition;
    share::SharePartitionKey key;
  };
  std::vector<Slot> reads;
  for (const auto& g : req.groups) {
    Resp::DescribeShareGroupOffsetsResponseGroup out;
    out.group_id = g.group_id;
    const size_t gi = pending->resp.groups.size();
    if (!AuthorizedOnGroup(ctx, r, AclOperation::kDescribe, g.group_id)) {
      out.error_code = Code(KafkaError::kGroupAuthorizationFailed);
      pending->resp.groups.push_back(std::move(out));
      continue;
    }
    group::CoordinatorLookup found = GroupCoordinatorFor(ctx, g.group_id);
    if (found.coordinator == nullptr) {
      out.error_code = Code(found.error);
      pending->resp.groups.push_back(std::move(out));
      continue;
    }
    // Which topics, and which of their partitions (empty: all).
    std::map<std::string, std::vector<int32_t>> wanted;
    if (g.topics) {
      for (const auto& t : *g.topics) wanted[t.topic_name] = t.partitions;
    } else {
      group::ShareGroupDescription d = found.coordinator->DescribeShareGroup(g.group_id);
      std::set<std::string> names = StoredTopics(ctx, g.group_id, topics);
      if (d.group) {
        names.insert(d.group->topics_subscribed().begin(), d.group->topics_subscribed().end());
      } else if (names.empty()) {
        out.error_code = Code(d.error);
        out.error_message = d.error_message;
        pending->resp.groups.push_back(std::move(out));
        continue;
      }
      for (const std::string& n : names) wanted[n];
    }
    for (auto& [name, parts] : wanted) {
      Resp::DescribeShareGroupOffsetsResponseTopic t;
      t.topic_name = name;
      auto info = topics.find(name);
      const bool known = info != topics.end();
      if (known) t.topic_id = info->second.id;
      if (parts.empty() && known) {
        for (int32_t p = 0; p < info->second.partitions; ++p) parts.push_back(p);
      }
      const bool allowed = AuthorizedOnTopic(ctx, r, AclOperation::kDescribe, name);
      for (int32_t p : parts) {
        Resp::DescribeShareGroupOffsetsResponsePartition rp;
        rp.partition_index = p;
        rp.start_offset = -1;
        rp.leader_epoch = -1;
        if (!allowed) {
          rp.error_code = Code(KafkaError::kTopicAuthorizationFailed);
        } else if (!known || p < 0 || p >= info->second.partitions) {
          rp.error_code = Code(KafkaError::kUnknownTopicOrPartition);
        } else {
          reads.push_back({gi, out.topics.size(), t.partitions.size(),
                           share::SharePartitionKey{g.group_id, info->second.id, p}});
        }
        t.partitions.push_back(rp);
      }
      out.topics.push_back(std::move(t));
    }
    pending->resp.groups.push_back(std::move(out));
  }
  // The response's shape is final: the reads fill in their slots.
  pending->Hold(reads.size());
  for (const Slot& s : reads) {
    ReadShareStateSummary(ctx, s.key, [pending, s](ShareStateSummary sum) {
      {
        std::lock_guard<std::mutex> lock(pending->mu);
        auto& rp = pending->resp.groups[s.group].topics[s.topic].partitions[s.partition];
        rp.error_code = Code(sum.error);
        rp.start_offset = sum.error == KafkaError::kNone ? sum.start_offset : -1;
        rp.leader_epoch = sum.leader_epoch;
      }
      Pending::Release(pending);
    });
  }
  Pending::Release(pending);
}

}  // namespace

extern const ApiHandler kDescribeShareGroupOffsetsHandler =
    MakeHandler<protocol::DescribeShareGroupOffsetsRequest, HandleDescribeShareGroupOffsets>(0, 0);

}  // namespace headrace::broker
