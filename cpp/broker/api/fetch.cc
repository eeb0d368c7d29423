// Fetch (key 1), v4+ (RecordBatch v2). Reads each requested partition from
// its fetch offset, as whole batches sent straight from the segment files
// (FileSlices, never copied):
//   - at most partition_max_bytes per partition and max_bytes in total, but
//     at least one whole batch for the first partition that has data (so a
//     batch larger than the limits still gets through, as Kafka does);
//   - never at or past the high watermark (read_uncommitted) or the last
//     stable offset (read_committed);
//   - OFFSET_OUT_OF_RANGE below the log start or past the log end offset.
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
// Fetch sessions (KIP-227) are not kept: every answer says session_id 0, so
// clients keep sending full fetch requests; forgotten_topics is ignored.
#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "broker/api/handler.h"
#include "broker/api/partition_checks.h"
#include "broker/kafka_error.h"

namespace headrace::broker {
namespace {

using Response = protocol::FetchResponse;
using Clock = Purgatory::Clock;

// Topic ids replace names from this version on.
constexpr int16_t kFirstTopicIdVersion = 13;

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
};

// One pass over every requested partition.
struct ReadPass {
  Response resp;
  int64_t bytes = 0;
  bool any_error = false;
  std::vector<Purgatory::Watch> watches;  // the partitions read without error
};

std::vector<Target> ResolveTopic(BrokerContext& ctx, const protocol::FetchRequest::FetchTopic& t,
                                 int16_t version) {
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
    if (!topic) {
      out[i].error = missing;
    } else if (p.partition < 0 || p.partition >= topic->partition_count()) {
      out[i].error = KafkaError::kUnknownTopicOrPartition;
    } else {
      const auto& partition = topic->partitions[p.partition];
      if (!partition) {  // cluster mode: no replica here
        out[i].error = KafkaError::kNotLeaderOrFollower;
        continue;
      }
      out[i].error = CheckLeaderEpoch(p.current_leader_epoch, *partition);
      if (out[i].error == KafkaError::kNone) out[i].partition = partition;
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

// Reads one partition into `out` with at most `max_bytes` (at least one
// batch if `min_one_batch`).
void ReadPartition(const Target& target, const protocol::FetchRequest::FetchPartition& in,
                   IsolationLevel isolation, int64_t max_bytes, bool min_one_batch,
                   Response::PartitionData* out, ReadPass* pass) {
  out->partition_index = in.partition;
  out->aborted_transactions.reset();
  if (isolation == IsolationLevel::kReadCommitted) out->aborted_transactions.emplace();
  if (!target.partition) {
    SetError(out, target.error);
    pass->any_error = true;
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
  const IsolationLevel isolation = ToIsolationLevel(request.isolation_level);
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
      ReadPartition(job.targets[t][p], in, isolation, limit, /*min_one_batch=*/pass.bytes == 0,
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
    job->req.Reply(pass.resp);
  });
}

void HandleFetch(BrokerContext& ctx, protocol::FetchRequest& request, Request req) {
  const int16_t version = req.version();
  auto job = std::make_shared<FetchJob>(&ctx, std::move(req), std::move(request));
  job->deadline = Clock::now() + std::chrono::milliseconds(std::max(job->request.max_wait_ms, 0));
  job->targets.reserve(job->request.topics.size());
  for (const auto& t : job->request.topics) job->targets.push_back(ResolveTopic(ctx, t, version));
  ReadPass pass = ReadAll(*job);
  if (Ready(*job, pass)) {
    job->req.Reply(pass.resp);
    return;
  }
  Park(std::move(job), std::move(pass.watches));
}

}  // namespace

extern const ApiHandler kFetchHandler = MakeHandler<protocol::FetchRequest, HandleFetch>(4, 16);

}  // namespace headrace::broker
