// Fetch (key 1), v4-17 (RecordBatch v2; v17 only adds the follower's
// replica_directory_id, which a ZooKeeper-mode cluster has no use for).
// Reads each requested partition from its fetch offset, as whole batches
// sent straight from the segment files (FileSlices, never copied):
//   - at most partition_max_bytes per partition and max_bytes in total, but
//     at least one whole batch for the first partition that has data (so a
//     batch larger than the limits still gets through, as Kafka does);
//   - never at or past the high watermark (read_uncommitted) or the last
//     stable offset (read_committed);
//   - OFFSET_OUT_OF_RANGE below the log start or past the log end offset;
//   - read_committed (isolation_level 1): aborted_transactions lists the
//     aborted transactions overlapping what was read (producer id, first
//     offset; Partition::Read), so the client drops their records.
// Topics are named by id from v13 (UNKNOWN_TOPIC_ID when unknown).
//
// Long poll: when fewer than min_bytes were found, no partition failed and
// max_wait_ms > 0, the request parks in the purgatory until a watched
// partition's high watermark (read_committed: last stable offset) passes
// what the fetch saw (then it re-reads, and parks again with the time left
// if still short of min_bytes) or the deadline passes. The re-read and the
// answer run on the connection's own I/O thread.
//
// Record bytes are always FileSlices here; the transmit layer decides
// whether they are copied or sent from the file (cpp/net/transmit_queue.h).
//
// Incremental fetch sessions (KIP-227, v7+; api/fetch_sessions.h and
// fetch/fetch_session.h): a full request with epoch 0 gets a session id; an
// incremental one is turned into a read of every partition of its session
// and answered with only the partitions that changed. A bad session id or
// epoch is a top-level error with no partitions.
//
// Every partition must be led here (else NOT_LEADER_OR_FOLLOWER), and a
// current_leader_epoch (v9+, -1 = no check) older than the partition's is
// FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH (KIP-320); both are
// checked again on every re-read of a parked fetch.
//
// Follower fetches (replica_id >= 0: the v0-14 replica_id field, v15+
// replica_state.replica_id; docs/cluster.md, "Followers and the ISR"):
//   - read up to the log end offset, not the HW (isolation is ignored);
//   - the fetch offset is the follower's LEO; its flushed offset is the
//     partition's headrace tag HeadraceFlushedOffset (tag 1000, v12+: a
//     headrace follower fsyncs behind its fetches) or, without the tag, the
//     fetch offset too (a follower that fsyncs before fetching again):
//     Partition::UpdateFollowerState(replica_id, fetch_offset, flushed)
//     before the answer, which carries the HW after that update. A replica
//     id the partition does not list is served without effect;
//   - OFFSET_OUT_OF_RANGE when the offset is below the log start or past the
//     LEO; that answer still carries the leader's HW and log start offset so
//     the follower can start over at the log start;
//   - v12+ last_fetched_epoch >= 0 whose end offset here (the leader's
//     epoch cache) is below the fetch offset, or is another epoch, fills
//     diverging_epoch (KIP-320) with that end and returns no records;
//   - the long poll watches the log end offset (new records), not the HW;
//   - the follower's broker epoch (KIP-380; v15+ replica_state.replica_epoch,
//     v12-14 the headrace tag HeadraceReplicaEpoch, -1 = none) goes with its
//     offsets into the partition's state, and the ISR additions the leader
//     proposes name it (KIP-903). A fetch under an epoch older than the
//     broker's registration the cluster view holds (an earlier incarnation,
//     e.g. a fetcher resumed after its session expired) is refused as a
//     whole: STALE_BROKER_EPOCH, no partitions, nothing updated.
#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "broker/api/cluster_lookup.h"
#include "broker/api/fetch_sessions.h"
#include "broker/api/fetch_metrics.h"
#include "broker/api/authorize.h"
#include "broker/api/handler.h"
#include "broker/api/quota_hooks.h"
#include "broker/api/partition_checks.h"
#include "broker/base/kafka_error.h"
#include "broker/replication/replication_quota.h"

namespace headrace::broker {
namespace {

using Response = protocol::FetchResponse;
using Clock = Purgatory::Clock;

// Topic ids replace names from this version on.
constexpr int16_t kFirstTopicIdVersion = 13;
// replica_id moved into replica_state from this version on.
constexpr int16_t kFirstReplicaStateVersion = 15;
// last_fetched_epoch / diverging_epoch exist from this version on.
constexpr int16_t kFirstDivergingEpochVersion = 12;

// One requested partition, resolved when the request arrives.
struct Target {
  std::shared_ptr<Partition> partition;  // null iff error != kNone
  KafkaError error = KafkaError::kNone;
};

// A fetch being answered, possibly later from another thread.
struct FetchJob {
  FetchJob(BrokerContext* c, Request r, protocol::FetchRequest&& f)
      : ctx(c), req(std::move(r)), request(std::move(f)) {}
  BrokerContext* ctx;  // outlives every parked fetch (BrokerState::Close wakes them)
  Request req;
  protocol::FetchRequest request;
  std::vector<std::vector<Target>> targets;  // [topic][partition], request order
  Clock::time_point deadline;
  int32_t replica_id = -1;  // >= 0: a follower broker's fetch
  int64_t replica_epoch = -1;  // its broker epoch, -1 = none
  FetchSessionUse session;  // how the answer updates the session cache

  bool from_follower() const { return replica_id >= 0; }
};

// One pass over every requested partition.
struct ReadPass {
  Response resp;
  int64_t bytes = 0;
  bool any_error = false;
  std::vector<Purgatory::Watch> watches;  // the partitions read without error
};

// `denied`: the whole fetch is refused (a follower without CLUSTER_ACTION);
// otherwise a consumer needs READ on each topic (ACLs, authorize.h).
std::vector<Target> ResolveTopic(BrokerContext& ctx, const protocol::FetchRequest::FetchTopic& t,
                                 int16_t version, const Request& req, bool follower, bool denied) {
  std::shared_ptr<const Topic> topic;
  KafkaError missing = KafkaError::kUnknownTopicOrPartition;
  if (version >= kFirstTopicIdVersion) {
    missing = KafkaError::kUnknownTopicId;
    if (!t.topic_id.is_zero()) topic = ctx.topics().FindTopicById(t.topic_id);
  } else {
    topic = ctx.topics().FindTopic(t.topic);
  }
  std::vector<Target> out(t.partitions.size());
  for (size_t i = 0; i < t.partitions.size(); ++i) {
    const auto& p = t.partitions[i];
    if (denied || (!follower && !AuthorizedOnTopic(ctx, req, AclOperation::kRead,
                                                    topic ? std::string_view(topic->name)
                                                          : std::string_view(t.topic)))) {
      out[i].error = KafkaError::kTopicAuthorizationFailed;
    } else if (!topic) {
      out[i].error = missing;
    } else if (p.partition < 0 || p.partition >= topic->partition_count()) {
      out[i].error = KafkaError::kUnknownTopicOrPartition;
    } else {
      // Leadership and epoch are checked at every read (ReadPartition).
      out[i].partition = topic->partitions[p.partition];
      if (!out[i].partition) out[i].error = KafkaError::kNotLeaderOrFollower;  // no replica here
    }
  }
  return out;
}

void SetError(Response::PartitionData* out, KafkaError error) {
  out->error_code = Code(error);
  out->high_watermark = -1;
  out->last_stable_offset = -1;
  out->log_start_offset = -1;
}

// Whether this broker serves fetches of `partition` for a client that
// knows `current_leader_epoch`: it must lead it, in that epoch (-1: any).
KafkaError CheckServesFetch(const Partition& partition, int32_t current_leader_epoch) {
  if (KafkaError e = CheckLeaderEpoch(current_leader_epoch, partition); e != KafkaError::kNone) {
    return e;
  }
  return partition.is_leader() ? KafkaError::kNone : KafkaError::kNotLeaderOrFollower;
}

// A follower's fetch of one partition (the head comment): reads up to the
// LEO, moves the follower's state, watches the LEO.
void ReadForFollower(const FetchJob& job, const std::shared_ptr<Partition>& partition,
                     const protocol::FetchRequest::FetchPartition& in, int64_t max_bytes,
                     bool min_one_batch, Response::PartitionData* out, ReadPass* pass) {
  const int32_t replica_id = job.replica_id;
  const int16_t version = job.req.version();
  const uint64_t state = partition->state_version();
  const Offset fetch_offset(in.fetch_offset);
  // Replication throttle (replication_quota.h): a throttled replica out of
  // the ISR gets no records while this leader's throttled rate is over.
  replication::ReplicationQuota* throttle = nullptr;
  if (job.ctx->replication_quotas != nullptr &&
      !job.ctx->replication_quotas->leader.unlimited() &&
      partition->ReplicationThrottled(Partition::ThrottleSide::kLeader, job.ctx->node_id) &&
      !partition->InIsr(replica_id)) {
    throttle = &job.ctx->replication_quotas->leader;
    if (throttle->Exceeded()) {
      max_bytes = 0;
      min_one_batch = false;
    } else {
      max_bytes = std::min(max_bytes, throttle->MaxReadBytes());
    }
  }
  Result<PartitionRead> read = partition->ReadForFollower(fetch_offset, max_bytes, min_one_batch);
  if (!read.ok()) {
    SetError(out, ToKafkaError(read.status()));
    if (read.status().code() == StatusCode::kOutOfRange) {
      out->high_watermark = partition->high_watermark().value();
      out->log_start_offset = partition->log_start_offset().value();
    }
    pass->any_error = true;
    return;
  }
  if (version >= kFirstDivergingEpochVersion && in.last_fetched_epoch >= 0) {
    EpochEndOffset end = partition->EndOffsetForEpoch(LeaderEpoch(in.last_fetched_epoch));
    if (end.epoch.value() != in.last_fetched_epoch || end.end_offset < fetch_offset) {
      out->error_code = Code(KafkaError::kNone);
      out->high_watermark = partition->high_watermark().value();
      out->last_stable_offset = out->high_watermark;
      out->log_start_offset = read->log_start_offset.value();
      out->diverging_epoch.epoch = end.epoch.value();
      out->diverging_epoch.end_offset = end.end_offset.value();
      out->records = protocol::Records();
      pass->any_error = true;  // answer now: the follower must truncate first
      return;
    }
  }
  // A headrace follower reports its flushed offset apart (it fsyncs behind
  // its fetches); without the tag the fetch offset is the flushed offset.
  const Offset flushed = in.headrace_flushed_offset >= 0
                             ? std::min(Offset(in.headrace_flushed_offset), fetch_offset)
                             : fetch_offset;
  partition->UpdateFollowerState(replica_id, fetch_offset, flushed, -1, job.replica_epoch);
  out->error_code = Code(KafkaError::kNone);
  out->high_watermark = partition->high_watermark().value();  // after the update
  out->last_stable_offset = out->high_watermark;
  out->log_start_offset = read->log_start_offset.value();
  out->diverging_epoch = {};
  out->records = protocol::Records::FromSlices(std::move(read->data.slices));
  pass->bytes += read->data.bytes;
  if (throttle != nullptr) throttle->Record(read->data.bytes);
  pass->watches.push_back({partition, Watermark::kLogEnd, read->log_end_offset + 1, state});
}

// Reads one partition into `out` with at most `max_bytes` (at least one
// batch if `min_one_batch`).
void ReadPartition(const FetchJob& job, const Target& target,
                   const protocol::FetchRequest::FetchPartition& in, IsolationLevel isolation,
                   int64_t max_bytes, bool min_one_batch, Response::PartitionData* out,
                   ReadPass* pass) {
  out->partition_index = in.partition;
  out->aborted_transactions.reset();
  if (isolation == IsolationLevel::kReadCommitted) out->aborted_transactions.emplace();
  if (!target.partition) {
    SetError(out, target.error);
    pass->any_error = true;
    return;
  }
  if (KafkaError e = CheckServesFetch(*target.partition, in.current_leader_epoch);
      e != KafkaError::kNone) {
    SetError(out, e);
    pass->any_error = true;
    return;
  }
  if (job.from_follower()) {
    ReadForFollower(job, target.partition, in, max_bytes, min_one_batch, out, pass);
    return;
  }
  const uint64_t state = target.partition->state_version();
  Result<PartitionRead> read =
      target.partition->Read(Offset(in.fetch_offset), max_bytes, isolation, min_one_batch);
  if (!read.ok()) {
    SetError(out, ToKafkaError(read.status()));
    pass->any_error = true;
    return;
  }
  out->error_code = Code(KafkaError::kNone);
  out->high_watermark = read->high_watermark.value();
  out->last_stable_offset = read->last_stable_offset.value();
  out->log_start_offset = read->log_start_offset.value();
  out->records = protocol::Records::FromSlices(std::move(read->data.slices));
  pass->bytes += read->data.bytes;
  for (const AbortedTxn& t : read->aborted_transactions) {
    out->aborted_transactions->push_back({t.producer_id, t.first_offset.value()});
  }
  if (isolation == IsolationLevel::kReadCommitted) {
    pass->watches.push_back(
        {target.partition, Watermark::kLastStable, read->last_stable_offset + 1, state});
  } else {
    pass->watches.push_back(
        {target.partition, Watermark::kHighWatermark, read->high_watermark + 1, state});
  }
}

ReadPass ReadAll(const FetchJob& job) {
  const protocol::FetchRequest& request = job.request;
  const IsolationLevel isolation = job.from_follower()
                                       ? IsolationLevel::kReadUncommitted
                                       : ToIsolationLevel(request.isolation_level);
  ReadPass pass;
  pass.resp.session_id = 0;
  pass.resp.error_code = Code(KafkaError::kNone);
  pass.resp.responses.resize(request.topics.size());
  int64_t budget = std::max<int64_t>(request.max_bytes, 0);
  for (size_t t = 0; t < request.topics.size(); ++t) {
    const auto& topic = request.topics[t];
    auto& topic_resp = pass.resp.responses[t];
    topic_resp.topic = topic.topic;
    topic_resp.topic_id = topic.topic_id;
    topic_resp.partitions.resize(topic.partitions.size());
    for (size_t p = 0; p < topic.partitions.size(); ++p) {
      const auto& in = topic.partitions[p];
      int64_t limit = std::clamp<int64_t>(in.partition_max_bytes, 0, budget);
      int64_t before = pass.bytes;
      ReadPartition(job, job.targets[t][p], in, isolation, limit, /*min_one_batch=*/pass.bytes == 0,
                    &topic_resp.partitions[p], &pass);
      budget = std::max<int64_t>(budget - (pass.bytes - before), 0);
    }
  }
  return pass;
}

// Whether `pass` is the answer now (rather than waiting for more data).
bool Ready(const FetchJob& job, const ReadPass& pass) {
  return job.request.max_wait_ms <= 0 || pass.watches.empty() || pass.any_error ||
         pass.bytes >= job.request.min_bytes;
}

int64_t RecordBytes(const Response& resp) {
  int64_t n = 0;
  for (const auto& t : resp.responses)
    for (const auto& p : t.partitions) n += p.records.size();
  return n;
}

void DropRecords(Response* resp) {
  for (auto& t : resp->responses)
    for (auto& p : t.partitions) p.records = protocol::Records();
}

// Sends the answer, with KIP-951 leader hints for partitions this broker
// does not lead (cluster mode).
void Answer(FetchJob& job, Response& resp) {
  if (job.from_follower()) {
    job.req.ClearThrottle();  // replication is not a client: no quota
  } else if (ThrottleFetch(*job.ctx, job.req, RecordBytes(resp))) {
    DropRecords(&resp);  // throttled: answered without data (quota_hooks.h)
  }
  FinishFetchSession(job.ctx->fetch_sessions, job.session, job.request, &resp);
  if (!job.from_follower()) CountFetchedBytes(job.targets, resp);  // fetch_metrics.h
  AddLeaderHints(*job.ctx, &resp, [&](const Response::FetchableTopicResponse& t) -> std::string {
    if (!t.topic.empty()) return t.topic;
    ClusterState* cluster = job.ctx->state->cluster();
    const TopicView* v = cluster ? cluster->view()->FindTopicById(t.topic_id) : nullptr;
    return v ? v->name : std::string();
  });
  job.req.Reply(resp);
}

// True when `epoch` (>= 0) is older than the registration of broker `id`
// that the cluster view holds. A newer one passes: the view may lag.
bool StaleBrokerEpoch(BrokerContext& ctx, int32_t id, int64_t epoch) {
  ClusterState* cluster = ctx.state->cluster();
  if (cluster == nullptr || epoch < 0) return false;
  std::shared_ptr<const ClusterView> view = cluster->view();
  const BrokerEndpoint* b = view->FindBroker(id);
  return b != nullptr && b->epoch > epoch;
}

void Park(std::shared_ptr<FetchJob> job, std::vector<Purgatory::Watch> watches) {
  Purgatory& purgatory = job->ctx->state->purgatory();
  Clock::time_point deadline = job->deadline;
  std::shared_ptr<net::LoopExecutor> executor = job->req.executor();
  purgatory.Wait(std::move(watches), deadline, std::move(executor), [job = std::move(job)](WakeReason why) {
    ReadPass pass = ReadAll(*job);
    if (why == WakeReason::kReady && !Ready(*job, pass) && Clock::now() < job->deadline) {
      Park(job, std::move(pass.watches));  // more data, still short of min_bytes
      return;
    }
    Answer(*job, pass.resp);
  });
}

void HandleFetch(BrokerContext& ctx, protocol::FetchRequest& request, Request req) {
  const int16_t version = req.version();
  auto job = std::make_shared<FetchJob>(&ctx, std::move(req), std::move(request));
  job->deadline = Clock::now() + std::chrono::milliseconds(std::max(job->request.max_wait_ms, 0));
  const bool has_replica_state = version >= kFirstReplicaStateVersion;
  job->replica_id = has_replica_state ? job->request.replica_state.replica_id
                                      : job->request.replica_id;
  job->replica_epoch = has_replica_state ? job->request.replica_state.replica_epoch
                                         : job->request.headrace_replica_epoch;
  if (job->from_follower() && StaleBrokerEpoch(ctx, job->replica_id, job->replica_epoch)) {
    job->req.Reply(FetchRefused(KafkaError::kStaleBrokerEpoch));
    return;
  }
  if (KafkaError e = BeginFetchSession(ctx.fetch_sessions, version, job->from_follower(),
                                       &job->request, &job->session);
      e != KafkaError::kNone) {
    Response resp = FetchRefused(e);
    job->req.Reply(resp);
    return;
  }
  if (!job->from_follower()) {  // consumer_byte_rate bounds one answer (quota_hooks.h)
    job->request.max_bytes = CapFetchMaxBytes(ctx, job->req, job->request.max_bytes);
  }
  job->targets.reserve(job->request.topics.size());
  // A follower's fetch needs CLUSTER_ACTION (the brokers' principal in
  // super.users or granted it; docs/security.md "Inter-broker security").
  const bool denied = job->from_follower() &&
                      !AuthorizedOnCluster(ctx, job->req, AclOperation::kClusterAction);
  for (const auto& t : job->request.topics) {
    job->targets.push_back(ResolveTopic(ctx, t, version, job->req, job->from_follower(), denied));
  }
  ReadPass pass = ReadAll(*job);
  if (Ready(*job, pass)) {
    Answer(*job, pass.resp);
    return;
  }
  Park(std::move(job), std::move(pass.watches));
}

}  // namespace

extern const ApiHandler kFetchHandler = MakeHandler<protocol::FetchRequest, HandleFetch>(4, 17);

}  // namespace headrace::broker
