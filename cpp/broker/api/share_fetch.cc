// ShareFetch (key 78), v1-2 (Kafka 4.1+/4.2; KIP-932, docs/share-groups.md):
// a share consumer's fetch from a partition leader. In order:
//   - READ on the group (else GROUP_AUTHORIZATION_FAILED, top level); an
//     empty group or member id is INVALID_REQUEST;
//   - the share session step (share/share_session.h): epoch 0 opens with
//     the request's partitions, N > 0 adds the request's partitions and
//     drops ForgottenTopicsData, -1 closes; SHARE_SESSION_NOT_FOUND /
//     INVALID_SHARE_SESSION_EPOCH / SHARE_SESSION_LIMIT_REACHED are top-level
//     errors with no partitions. Acknowledgements in an epoch-0 request are
//     INVALID_REQUEST, as Kafka;
//   - piggy-backed acknowledgements, per partition (AcknowledgeErrorCode:
//     INVALID_RECORD_STATE, INVALID_REQUEST, or the partition's error);
//   - epoch -1: the member's acquired records here are released and the
//     answer carries the acknowledgement results only; MaxRecords <= 0
//     (librdkafka's "acknowledgements only") acquires nothing either;
//   - otherwise every partition of the session is fetched: records are
//     acquired for the member (at most MaxRecords in all, new ones below the
//     high watermark) and the answer carries, per partition, the log's
//     batches holding them (Records) and the acquired ranges with their
//     delivery counts (AcquiredRecords); MaxBytes bounds the bytes read,
//     except that every acquired range is sent with at least its first
//     batch. BatchSize and ShareAcquireMode are accepted and not used: the
//     acquisition is record-limited always;
//   - READ on each topic (TOPIC_AUTHORIZATION_FAILED per partition); a
//     partition not led here is NOT_LEADER_OR_FOLLOWER with CurrentLeader
//     and NodeEndpoints (KIP-951) in cluster mode.
// Durability: the answer waits until the share coordinator has committed
// the state its piggy-backed acknowledgements changed and the start of
// every share-partition it created (api/share_state.h); if that fails, the
// acknowledgements answer REQUEST_TIMED_OUT / KAFKA_STORAGE_ERROR and the
// records of a share-partition whose start was not stored are released.
// Long poll: when nothing was acquired, no partition failed and MaxWaitMs >
// 0, the request parks in the purgatory until a partition's high watermark
// moves or MaxWaitMs passes, then acquires again; the re-read and the
// answer run on the connection's I/O thread. A record released or expired
// meanwhile by another member is found at the next acquisition, not by a
// wake-up.
#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
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

using Req = protocol::ShareFetchRequest;
using Resp = protocol::ShareFetchResponse;
using Clock = Purgatory::Clock;
using share::TopicIdPartition;

struct ShareFetchJob {
  ShareFetchJob(BrokerContext* c, Request r, std::string g, std::string m)
      : ctx(c), req(std::move(r)), group(std::move(g)), member(std::move(m)) {}
  BrokerContext* ctx;  // outlives every parked fetch
  Request req;
  std::string group;
  std::string member;
  int16_t epoch = 0;
  int32_t max_records = 0;
  int64_t max_bytes = 0;
  Clock::time_point deadline;
  std::vector<ShareTarget> targets;              // the session's partitions
  std::map<TopicIdPartition, KafkaError> acks;   // piggy-backed acknowledgement results
  std::map<Uuid, std::string> names;             // topic names for leader hints
  ShareWaits waits;                              // share state the answer waits for
  // The first acquisition of a session-opening request (epoch 0): idle
  // share-partitions are read again from their store (api/share_state.h).
  bool revalidate = false;
};

struct SharePass {
  std::map<TopicIdPartition, Resp::PartitionData> parts;
  int64_t acquired = 0;
  bool any_error = false;
  bool loading = false;  // a share-partition is being read from its coordinator
  std::vector<Purgatory::Watch> watches;
};

SharePass ReadAll(ShareFetchJob& job) {
  SharePass pass;
  int64_t budget = std::max<int64_t>(job.max_bytes, 0);
  int64_t records_left = job.max_records;
  for (const ShareTarget& t : job.targets) {
    Resp::PartitionData& out = pass.parts[{t.topic_id, t.index}];
    out.partition_index = t.index;
    if (records_left <= 0) continue;
    ShareRead r = AcquireAndRead(*job.ctx, job.group, job.member, t,
                                 static_cast<int32_t>(records_left), &budget, job.revalidate);
    job.waits.Add(r.created);
    pass.loading = pass.loading || r.loading;
    if (r.error != KafkaError::kNone) {
      out.error_code = Code(r.error);
      pass.any_error = true;
      continue;
    }
    for (const share::AcquiredRange& a : r.acquired) {
      out.acquired_records.push_back({a.first, a.last, a.delivery_count});
      records_left -= a.last - a.first + 1;
      pass.acquired += a.last - a.first + 1;
    }
    out.records = protocol::Records::FromSlices(std::move(r.slices));
    pass.watches.push_back(
        {t.partition, r.bound, Offset(r.bound_offset + 1), r.state_version});
  }
  return pass;
}

bool Ready(const ShareFetchJob& job, const SharePass& pass) {
  return pass.acquired > 0 || pass.any_error || (pass.watches.empty() && !pass.loading) ||
         Clock::now() >= job.deadline;
}

// How often a parked fetch looks again while a share-partition loads.
constexpr std::chrono::milliseconds kLoadingRecheck{20};

// Sends the answer: every partition with records, an error or an
// acknowledgement result (all of the session's on an epoch-0 request).
void Answer(ShareFetchJob& job, SharePass& pass) {
  for (const auto& [tp, error] : job.acks) {
    Resp::PartitionData& p = pass.parts[tp];
    p.partition_index = tp.second;
    p.acknowledge_error_code = Code(error);
  }
  Resp resp;
  resp.acquisition_lock_timeout_ms = SharePartitionConfigOf(*job.ctx, job.group).record_lock_duration_ms;
  std::map<Uuid, size_t> topic_index;
  for (auto& [tp, p] : pass.parts) {
    const bool listed = job.epoch == 0 || !p.acquired_records.empty() || p.error_code != 0 ||
                        job.acks.count(tp) > 0;
    if (!listed) continue;
    auto [it, added] = topic_index.try_emplace(tp.first, resp.responses.size());
    if (added) resp.responses.emplace_back().topic_id = tp.first;
    resp.responses[it->second].partitions.push_back(std::move(p));
  }
  AddLeaderHints(*job.ctx, &resp, [&](const Resp::ShareFetchableTopicResponse& t) {
    auto it = job.names.find(t.topic_id);
    return it == job.names.end() ? std::string() : it->second;
  });
  if (job.waits.empty()) return job.req.Reply(resp);
  // The records of a share-partition whose start could not be stored are
  // given back (released), not sent: its start is decided again.
  const std::string group = job.group, member = job.member;
  ReplyWhenShareStateDone(*job.ctx, std::move(job.waits), std::move(job.req), std::move(resp),
                         [ctx = job.ctx, group, member](Resp& r, KafkaError e) {
                           ctx->share_partitions->ReleaseMember(group, member);
                           for (auto& t : r.responses) {
                             for (auto& p : t.partitions) {
                               if (p.acknowledge_error_code == 0) p.acknowledge_error_code = Code(e);
                               if (!p.acquired_records.empty()) {
                                 p.acquired_records.clear();
                                 p.records = protocol::Records{};
                                 p.error_code = Code(e);
                               }
                             }
                           }
                         });
}

void Park(std::shared_ptr<ShareFetchJob> job, std::vector<Purgatory::Watch> watches,
          bool loading) {
  Purgatory& purgatory = job->ctx->state->purgatory();
  const Clock::time_point deadline =
      loading ? std::min(job->deadline, Clock::now() + kLoadingRecheck) : job->deadline;
  std::shared_ptr<net::LoopExecutor> executor = job->req.executor();
  purgatory.Wait(std::move(watches), deadline, std::move(executor),
                 [job = std::move(job)](WakeReason why) {
                   SharePass pass = ReadAll(*job);
                   if (why != WakeReason::kShutdown && !Ready(*job, pass)) {
                     // The HW moved or a share-partition is still loading:
                     // nothing acquirable yet.
                     Park(job, std::move(pass.watches), pass.loading);
                     return;
                   }
                   Answer(*job, pass);
                 });
}

void HandleShareFetch(BrokerContext& ctx, Req& request, Request req) {
  const std::string group = request.group_id.value_or("");
  const std::string member = request.member_id.value_or("");
  if (ShareRefusal no = CheckShareMember(ctx, req, group, member); no.error != KafkaError::kNone) {
    return ReplyRefusal(req, Resp{}, std::move(no));
  }
  const int32_t epoch = request.share_session_epoch;
  std::vector<TopicIdPartition> added;
  bool has_acks = false;
  for (const auto& t : request.topics) {
    for (const auto& p : t.partitions) {
      added.emplace_back(t.topic_id, p.partition_index);
      has_acks = has_acks || !p.acknowledgement_batches.empty();
    }
  }
  if (epoch == 0 && has_acks) {
    return ReplyRefusal(req, Resp{},
                        {KafkaError::kInvalidRequest,
                         "Acknowledge data present on initial fetch of a share session."});
  }
  std::vector<TopicIdPartition> forgotten;
  for (const auto& t : request.forgotten_topics_data) {
    for (int32_t p : t.partitions) forgotten.emplace_back(t.topic_id, p);
  }
  share::SessionUpdate session =
      ctx.share_sessions->OnFetch(group, member, epoch, epoch == -1 ? std::vector<TopicIdPartition>{}
                                                                    : added,
                                  forgotten);
  if (session.outcome != share::SessionOutcome::kOk) {
    return ReplyRefusal(req, Resp{}, {ShareSessionError(session.outcome)});
  }

  auto job = std::make_shared<ShareFetchJob>(&ctx, std::move(req), group, member);
  job->epoch = static_cast<int16_t>(std::clamp(epoch, -1, 1));  // 0 = new, -1 = closing
  job->max_records = request.max_records;
  job->max_bytes = request.max_bytes;
  job->deadline = Clock::now() + std::chrono::milliseconds(std::max(request.max_wait_ms, 0));
  for (const auto& t : request.topics) {
    for (const auto& p : t.partitions) {
      if (p.acknowledgement_batches.empty()) continue;
      ShareTarget target = ResolveShareTarget(ctx, job->req, t.topic_id, p.partition_index);
      if (!target.topic.empty()) job->names[t.topic_id] = target.topic;
      std::vector<AckBatch> batches;
      for (const auto& b : p.acknowledgement_batches) {
        batches.push_back({b.first_offset, b.last_offset, b.acknowledge_types});
      }
      job->acks[{t.topic_id, p.partition_index}] =
          ApplyAcknowledgements(ctx, group, member, target, batches, &job->waits);
    }
  }
  if (epoch == -1 || request.max_records <= 0) {  // closing, or acknowledging only
    if (epoch == -1) ctx.share_partitions->ReleaseMember(group, member);
    SharePass none;
    Answer(*job, none);
    return;
  }
  for (const TopicIdPartition& tp : session.partitions) {
    ShareTarget target = ResolveShareTarget(ctx, job->req, tp.first, tp.second);
    if (!target.topic.empty()) job->names[tp.first] = target.topic;
    job->targets.push_back(std::move(target));
  }
  job->revalidate = epoch == 0;
  SharePass pass = ReadAll(*job);
  job->revalidate = false;
  if (request.max_wait_ms <= 0 || Ready(*job, pass)) {
    Answer(*job, pass);
    return;
  }
  const bool loading = pass.loading;
  Park(std::move(job), std::move(pass.watches), loading);
}

}  // namespace

extern const ApiHandler kShareFetchHandler =
    MakeHandler<protocol::ShareFetchRequest, HandleShareFetch>(1, 2);

}  // namespace headrace::broker
