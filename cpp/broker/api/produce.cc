// Produce (key 0). v3+ carry RecordBatch v2; v0-2 carry Kafka's message
// formats v0/v1, up-converted to one v2 batch per partition first
// (log/legacy_message_set.h), as Kafka 3.x does. Appends each partition's
// batches to its log and answers according to acks:
//   0         no response (the connection is closed if any partition
//             failed, as Kafka does, so the producer notices and refreshes);
//   1         once appended;
//   -1 (all)  once committed: the partition's high watermark passed the
//             last offset (with headrace.acks.all.fsync, the HW only moves
//             over fsynced data: group commit on the flusher thread). The
//             request waits in the purgatory and is answered on its
//             connection's own I/O thread; REQUEST_TIMED_OUT after
//             timeout_ms; NOT_ENOUGH_REPLICAS when the ISR is smaller than
//             min.insync.replicas (checked before appending), and
//             NOT_ENOUGH_REPLICAS_AFTER_APPEND when it shrank below it
//             while waiting;
//   other     INVALID_REQUIRED_ACKS on every partition, nothing appended.
// The network thread checks the request and copies each partition's records
// out of the request frame (which it reuses once the handler returns); the
// appends run on the log writers (LogWriters: a pool per log directory, each
// partition's appends in arrival order; no disk call on a network thread);
// the answer is built back on the connection's network thread.
// Topics are auto-created like Metadata does when auto.create.topics.enable.
// The log validates every batch (CRC, sizes, the records, decompressed when
// compressed; timestamp bounds), stores it as sent or re-encoded per the
// topic's compression.type, and assigns offsets in place in the request
// frame. Its errors map to CORRUPT_MESSAGE, INVALID_RECORD (the records
// themselves) and INVALID_TIMESTAMP through Status::detail (ToKafkaError).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "broker/api/cluster_lookup.h"
#include "broker/api/authorize.h"
#include "broker/api/handler.h"
#include "broker/api/quota_hooks.h"
#include "broker/base/kafka_error.h"
#include "broker/partition/topic_name.h"
#include "broker/storage/log_writers.h"
#include "headrace/record_batch.h"
#include "log/legacy_message_set.h"

namespace headrace::broker {
namespace {

using Response = protocol::ProduceResponse;
using PartitionResponse = Response::PartitionProduceResponse;

// The first Produce version whose records are RecordBatch v2 (magic 2).
constexpr int16_t kFirstRecordBatchVersion = 3;

void SetError(PartitionResponse* out, KafkaError error, int16_t version, std::string message) {
  // Kafka before v4 has no KAFKA_STORAGE_ERROR; clients then see the
  // retriable NOT_LEADER_OR_FOLLOWER.
  if (error == KafkaError::kKafkaStorageError && version < 4) {
    error = KafkaError::kNotLeaderOrFollower;
  }
  out->error_code = Code(error);
  out->base_offset = -1;
  out->log_append_time_ms = -1;
  out->log_start_offset = -1;
  out->error_message = std::move(message);
}

// The append's error as Produce reports it.
KafkaError AppendError(const Status& st) {
  // A batch that is not magic v2: Kafka rejects it as an invalid record.
  if (st.code() == StatusCode::kUnsupported) return KafkaError::kInvalidRecord;
  return ToKafkaError(st);
}

// A compacted topic (cleanup.policy contains compact) refuses records
// without a key, as Kafka does: the whole batch is rejected with
// INVALID_RECORD and one record_errors entry (v8+) per keyless record,
// batch_index being the record's index in the batch. Returns true when it
// refused. Cost: the records are decoded (decompressed) once more, on
// compacted topics only. Malformed batches are left to the log's checks.
bool RefuseKeyless(std::span<const uint8_t> batches, const std::string& topic, int32_t partition,
                   int16_t version, PartitionResponse* out) {
  Result<std::vector<Record>> records = DecodeRecords(batches);
  if (!records.ok()) return false;
  std::vector<Response::BatchIndexAndErrorMessage> errors;
  const std::string message = "Compacted topic cannot accept message without key in topic partition " +
                              topic + "-" + std::to_string(partition) + ".";
  for (size_t i = 0; i < records->size(); ++i) {
    if ((*records)[i].key) continue;
    Response::BatchIndexAndErrorMessage e;
    e.batch_index = static_cast<int32_t>(i);
    e.batch_index_error_message = message;
    errors.push_back(std::move(e));
  }
  if (errors.empty()) return false;
  SetError(out, KafkaError::kInvalidRecord, version, message);
  out->record_errors = std::move(errors);
  return true;
}

// One partition of a Produce: checked on the network thread, appended on its
// log directory's writer.
struct PartitionAppend {
  PartitionResponse* out = nullptr;  // into the response being built
  std::shared_ptr<Partition> partition;
  const std::string* topic = nullptr;  // the name in the response (lives as long as the append)
  int32_t index = 0;
  std::span<uint8_t> batches;  // the records: in the request frame, or in `owned`
  std::vector<uint8_t> owned;  // a copy for a writer thread, or v0-2 up-converted to v2
  // Set by the append:
  bool appended = false;
  Offset last_offset{-1};
  uint64_t state_before = 0;  // a state change after the append wakes an acks=all wait
};

// A Produce between its check and its answer. Each append touches only its
// own PartitionAppend (and its `out`); the last one to finish hands the rest
// back to the connection's network thread, so nothing else needs a lock.
struct PendingProduce {
  explicit PendingProduce(Request r) : req(std::move(r)) {}
  Request req;
  Response resp;
  int16_t acks = 1;
  std::chrono::milliseconds timeout{0};
  bool any_error = false;  // a partition failed its checks (network thread)
  std::vector<PartitionAppend> appends;
  bool inline_appends = false;  // on the network thread (see HandleProduce)
  std::atomic<int> appends_left{0};
  std::atomic<int> waiting{0};  // acks=all: partitions not yet settled
};

// Checks one partition of the request on the network thread. Fills `out` and
// returns nothing when it fails; else the append to run, with the records
// copied out of the request frame when `copy` (the frame is reused once the
// handler returns).
std::optional<PartitionAppend> PreparePartition(
    const Topic* topic, KafkaError topic_error, const std::string& topic_message,
    protocol::ProduceRequest::PartitionProduceData& data, int16_t version, bool copy,
    PartitionResponse* out) {
  out->index = data.index;
  if (topic == nullptr) {
    SetError(out, topic_error, version, topic_message);
    return std::nullopt;
  }
  if (data.index < 0 || data.index >= topic->partition_count()) {
    SetError(out, KafkaError::kUnknownTopicOrPartition, version,
             "partition " + std::to_string(data.index) + " of " + topic->name +
                 " does not exist");
    return std::nullopt;
  }
  if (data.records.is_null || data.records.data.empty()) {
    SetError(out, KafkaError::kInvalidRecord, version, "no record batch for the partition");
    return std::nullopt;
  }
  const std::shared_ptr<Partition>& partition = topic->partitions[data.index];
  if (!partition) {  // cluster mode: no replica here
    SetError(out, KafkaError::kNotLeaderOrFollower, version,
             "this broker holds no replica of " + topic->name + "-" + std::to_string(data.index));
    return std::nullopt;
  }
  PartitionAppend a;
  a.out = out;
  a.partition = partition;
  a.index = data.index;
  std::span<uint8_t> batches = data.records.data;
  if (version < kFirstRecordBatchVersion) {
    if (!IsLegacyMessageSet(batches)) {
      SetError(out, KafkaError::kInvalidRecord, version,
               "Produce v" + std::to_string(version) + " carries message format v0/v1 only");
      return std::nullopt;
    }
    Result<std::string> v2 = ConvertLegacyMessageSet(batches);
    if (!v2.ok()) {
      SetError(out, ToKafkaError(v2.status()), version, v2.status().message());
      return std::nullopt;
    }
    a.owned.assign(v2->begin(), v2->end());
    a.batches = a.owned;
  } else if (copy) {
    a.owned.assign(batches.begin(), batches.end());
    a.batches = a.owned;
  } else {
    a.batches = batches;
  }
  return a;
}

// Appends one partition's records on its writer and fills its answer.
void RunAppend(PartitionAppend& a, int16_t version, int16_t acks) {
  Partition& partition = *a.partition;
  if (partition.compaction_settings().compact &&
      RefuseKeyless(a.batches, *a.topic, a.index, version, a.out))
    return;
  a.state_before = partition.state_version();
  Result<AppendInfo> info = partition.AppendAsLeader(a.batches, acks);
  if (!info.ok()) {
    SetError(a.out, AppendError(info.status()), version, info.status().message());
    return;
  }
  a.out->error_code = Code(KafkaError::kNone);
  a.out->base_offset = info->base_offset.value();
  a.out->log_append_time_ms = info->log_append_time.value();
  a.out->log_start_offset = partition.log_start_offset().value();
  a.last_offset = info->last_offset;
  a.appended = true;
}

// Settles one partition after its commit wait: committed, or why not.
void Settle(const PartitionAppend& a, WakeReason why, int16_t version) {
  const Partition& p = *a.partition;
  if (p.offline()) {
    SetError(a.out, KafkaError::kKafkaStorageError, version,
             "appended but not committed: " + p.topic_partition().ToString() + " went offline");
  } else if (p.high_watermark() <= a.last_offset) {
    if (why == WakeReason::kDeadline) {
      SetError(a.out, KafkaError::kRequestTimedOut, version,
               "appended but not committed within the request's timeout_ms");
    } else if (why == WakeReason::kShutdown) {
      SetError(a.out, KafkaError::kNotLeaderOrFollower, version,
               "appended but not committed: the broker is shutting down");
    } else {
      SetError(a.out, KafkaError::kNotLeaderOrFollower, version,
               "appended but not committed: " + p.topic_partition().ToString() +
                   " was truncated or changed leader");
    }
  } else if (p.isr_size() < p.min_insync_replicas()) {
    SetError(a.out, KafkaError::kNotEnoughReplicasAfterAppend, version,
             "committed with " + std::to_string(p.isr_size()) +
                 " in-sync replica(s), below min.insync.replicas " +
                 std::to_string(p.min_insync_replicas()));
  }
}

void Answer(BrokerContext& ctx, PendingProduce& pending) {
  AddLeaderHints(ctx, &pending.resp, [](const auto& t) { return t.name; });
  pending.req.Reply(pending.resp);
}

// acks=all: parks the answer until every appended partition's high
// watermark passes its last offset. Every completion runs on the
// connection's network thread (or, without an executor, on the waking
// thread of a test); the last one answers.
void WaitForCommit(BrokerContext& ctx, const std::shared_ptr<PendingProduce>& pending,
                   std::vector<PartitionAppend*> uncommitted) {
  const int16_t version = pending->req.version();
  const auto deadline = Purgatory::Clock::now() + pending->timeout;
  pending->waiting.store(static_cast<int>(uncommitted.size()));
  for (PartitionAppend* a : uncommitted) {
    Purgatory::Watch watch{a->partition, Watermark::kHighWatermark, a->last_offset + 1,
                           a->state_before};
    ctx.state->purgatory().Wait({std::move(watch)}, deadline, pending->req.executor(),
                                [pending, a, version, ctx_ptr = &ctx](WakeReason why) {
                                  Settle(*a, why, version);
                                  if (pending->waiting.fetch_sub(1) == 1) Answer(*ctx_ptr, *pending);
                                });
  }
}

// After the appends, on the connection's network thread: answers by acks.
void Finish(BrokerContext& ctx, const std::shared_ptr<PendingProduce>& pending) {
  bool any_error = pending->any_error;
  for (const PartitionAppend& a : pending->appends) any_error |= !a.appended;
  if (pending->acks == 0) {
    if (any_error) pending->req.Close("acks=0 produce failed on some partition");
    else pending->req.NoResponse();
    return;
  }
  if (pending->acks == -1) {
    std::vector<PartitionAppend*> uncommitted;
    for (PartitionAppend& a : pending->appends) {
      if (a.appended && a.partition->high_watermark() <= a.last_offset) uncommitted.push_back(&a);
    }
    if (!uncommitted.empty()) {
      WaitForCommit(ctx, pending, std::move(uncommitted));
      return;
    }
  }
  Answer(ctx, *pending);
}

// Posts each partition's append to its directory's writers (in request
// order per partition); the last append to finish posts Finish to the
// connection's network thread.
void AppendOnWriters(BrokerContext& ctx, const std::shared_ptr<PendingProduce>& pending) {
  if (pending->inline_appends) {
    for (PartitionAppend& a : pending->appends) RunAppend(a, pending->req.version(), pending->acks);
    Finish(ctx, pending);
    return;
  }
  pending->appends_left.store(static_cast<int>(pending->appends.size()));
  for (PartitionAppend& a : pending->appends) {
    ctx.state->log_writers().Post(a.partition.get(), a.partition->dir(), [&ctx, pending, &a] {
      RunAppend(a, pending->req.version(), pending->acks);
      if (pending->appends_left.fetch_sub(1) == 1) {
        pending->req.RunOnLoop([&ctx, pending] { Finish(ctx, pending); });
      }
    });
  }
}

// Whether `name` exists (single node: locally; cluster: in the view).
bool TopicExists(const BrokerContext& ctx, const std::string& name) {
  if (ClusterState* cluster = ctx.state->cluster()) return cluster->view()->FindTopic(name) != nullptr;
  return ctx.topics().FindTopic(name) != nullptr;
}

void HandleProduce(BrokerContext& ctx, protocol::ProduceRequest& request, Request req) {
  const int16_t acks = request.acks;
  const int16_t version = req.version();
  if (acks == 0) req.ClearThrottle();  // as Kafka: no request-time throttle without an answer
  ThrottleProduce(ctx, req);  // producer_byte_rate (quota_hooks.h)
  auto pending = std::make_shared<PendingProduce>(std::move(req));
  pending->acks = acks;
  pending->timeout = std::chrono::milliseconds(std::max(request.timeout_ms, 0));
  Response& resp = pending->resp;
  resp.responses.resize(request.topic_data.size());
  // ACLs: a transactional producer needs WRITE on its transactional id
  // (every partition fails otherwise), then WRITE on each topic.
  // Appends run on the log writers, except with headrace.log.writer.threads=0.
  // A request its producer_byte_rate throttles mutes its connection now,
  // not at its answer: the requests framed behind it are not dispatched
  // until the throttle has passed (KIP-219), as behind Kafka's one request
  // at a time per connection; muted only at the answer, the requests read
  // while the append ran would all pass the quota.
  pending->inline_appends = !ctx.state->log_writers().enabled();
  pending->req.MuteNow();
  const bool copy = !pending->inline_appends;
  const bool txn_denied =
      request.transactional_id &&
      !AuthorizedOnTxnId(ctx, pending->req, AclOperation::kWrite, *request.transactional_id);
  for (size_t t = 0; t < request.topic_data.size(); ++t) {
    auto& topic_data = request.topic_data[t];
    auto& topic_resp = resp.responses[t];
    topic_resp.name = topic_data.name;
    topic_resp.partition_responses.resize(topic_data.partition_data.size());
    std::shared_ptr<const Topic> topic;
    KafkaError topic_error = KafkaError::kNone;
    std::string topic_message;
    if (acks != 0 && acks != 1 && acks != -1) {
      topic_error = KafkaError::kInvalidRequiredAcks;
      topic_message = "acks must be 0, 1 or -1 (all), not " + std::to_string(acks);
    } else if (txn_denied) {
      topic_error = KafkaError::kTransactionalIdAuthorizationFailed;
      topic_message = "Transactional id authorization failed.";
    } else if (!AuthorizedOnTopic(ctx, pending->req, AclOperation::kWrite, topic_data.name)) {
      topic_error = KafkaError::kTopicAuthorizationFailed;
      topic_message = "Topic authorization failed.";
    } else if (Status internal =
                   CheckClientOpOnInternalTopic(topic_data.name, InternalTopicOp::kProduce);
               !internal.ok()) {
      topic_error = ToKafkaError(internal);
      topic_message = internal.message();
    } else if (AuthorizerEnabled(ctx) && !TopicExists(ctx, topic_data.name) &&
               !MayAutoCreate(ctx, pending->req, topic_data.name)) {  // auto-creation needs CREATE
      topic_error = KafkaError::kUnknownTopicOrPartition;
      topic_message = "This server does not host this topic-partition.";
    } else if (auto found = FindTopicForData(ctx, topic_data.name); found.ok()) {
      topic = *found;
    } else {
      topic_error = ToKafkaError(found.status());
      topic_message = found.status().message();
    }
    for (size_t p = 0; p < topic_data.partition_data.size(); ++p) {
      std::optional<PartitionAppend> a =
          PreparePartition(topic.get(), topic_error, topic_message,
                           topic_data.partition_data[p], version, copy,
                           &topic_resp.partition_responses[p]);
      if (a) {
        a->topic = &topic_resp.name;
        pending->appends.push_back(std::move(*a));
      } else {
        pending->any_error = true;
      }
    }
  }
  if (pending->appends.empty()) {
    Finish(ctx, pending);
    return;
  }
  AppendOnWriters(ctx, pending);
}

}  // namespace

// Versions 0-2 (message formats v0/v1) are up-converted. Clients that ask
// ApiVersions pick v3+; librdkafka < 2.1 (Debian's kcat) enables
// gzip/snappy/lz4 only when a broker lists Produce v0. Clients told the
// broker is older than 0.10 (api.version.request=false) send v0-2 without
// asking.
extern const ApiHandler kProduceHandler = MakeHandler<protocol::ProduceRequest, HandleProduce>(0, 10);

}  // namespace headrace::broker
