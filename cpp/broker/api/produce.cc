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
#include <string>
#include <vector>

#include "broker/api/cluster_lookup.h"
#include "broker/api/authorize.h"
#include "broker/api/handler.h"
#include "broker/api/quota_hooks.h"
#include "broker/base/kafka_error.h"
#include "broker/partition/topic_name.h"
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

// Appends one partition's records. Fills `out`; returns the partition when
// the append succeeded (null otherwise) and sets *last_offset and
// *state_before (the partition's state version read before the append).
std::shared_ptr<Partition> AppendPartition(const Topic* topic, KafkaError topic_error,
                                           const std::string& topic_message,
                                           protocol::ProduceRequest::PartitionProduceData& data,
                                           int16_t version, int16_t acks, PartitionResponse* out,
                                           Offset* last_offset, uint64_t* state_before) {
  out->index = data.index;
  if (topic == nullptr) {
    SetError(out, topic_error, version, topic_message);
    return nullptr;
  }
  if (data.index < 0 || data.index >= topic->partition_count()) {
    SetError(out, KafkaError::kUnknownTopicOrPartition, version,
             "partition " + std::to_string(data.index) + " of " + topic->name +
                 " does not exist");
    return nullptr;
  }
  if (data.records.is_null || data.records.data.empty()) {
    SetError(out, KafkaError::kInvalidRecord, version, "no record batch for the partition");
    return nullptr;
  }
  const std::shared_ptr<Partition>& partition = topic->partitions[data.index];
  if (!partition) {  // cluster mode: no replica here
    SetError(out, KafkaError::kNotLeaderOrFollower, version,
             "this broker holds no replica of " + topic->name + "-" + std::to_string(data.index));
    return nullptr;
  }
  std::span<uint8_t> batches = data.records.data;
  std::string converted;  // v0-2: the message set as a v2 batch
  if (version < kFirstRecordBatchVersion) {
    if (!IsLegacyMessageSet(batches)) {
      SetError(out, KafkaError::kInvalidRecord, version,
               "Produce v" + std::to_string(version) + " carries message format v0/v1 only");
      return nullptr;
    }
    Result<std::string> v2 = ConvertLegacyMessageSet(batches);
    if (!v2.ok()) {
      SetError(out, ToKafkaError(v2.status()), version, v2.status().message());
      return nullptr;
    }
    converted = std::move(v2).value();
    batches = {reinterpret_cast<uint8_t*>(converted.data()), converted.size()};
  }
  if (partition->compaction_settings().compact &&
      RefuseKeyless(batches, topic->name, data.index, version, out))
    return nullptr;
  *state_before = partition->state_version();
  Result<AppendInfo> info = partition->AppendAsLeader(batches, acks);
  if (!info.ok()) {
    SetError(out, AppendError(info.status()), version, info.status().message());
    return nullptr;
  }
  out->error_code = Code(KafkaError::kNone);
  out->base_offset = info->base_offset.value();
  out->log_append_time_ms = info->log_append_time.value();
  out->log_start_offset = partition->log_start_offset().value();
  *last_offset = info->last_offset;
  return partition;
}

// One appended partition of an acks=all produce, waiting to be committed.
struct Appended {
  PartitionResponse* out;  // into the response being built
  std::shared_ptr<Partition> partition;
  Offset last_offset;
  uint64_t state_before;  // a state change after the append wakes the wait
};

// An acks=all response waiting for its partitions' high watermarks. Every
// completion runs on the connection's I/O thread (or, without an executor,
// on the waking thread of a test), so `remaining` needs no lock.
struct PendingProduce {
  explicit PendingProduce(Request r) : req(std::move(r)) {}
  Request req;
  Response resp;
  std::atomic<int> remaining{0};
};

// Settles one partition after its wait: committed, or why not.
void Settle(const Appended& a, WakeReason why, int16_t version) {
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

void WaitForCommit(BrokerContext& ctx, std::shared_ptr<PendingProduce> pending,
                   std::vector<Appended> appended, std::chrono::milliseconds timeout) {
  const int16_t version = pending->req.version();
  const auto deadline = Purgatory::Clock::now() + timeout;
  pending->remaining.store(static_cast<int>(appended.size()));
  for (Appended& a : appended) {
    Purgatory::Watch watch{a.partition, Watermark::kHighWatermark, a.last_offset + 1,
                           a.state_before};
    ctx.state->purgatory().Wait({std::move(watch)}, deadline, pending->req.executor(),
                                [pending, a, version, ctx_ptr = &ctx](WakeReason why) {
                                  Settle(a, why, version);
                                  if (pending->remaining.fetch_sub(1) == 1) {
                                    AddLeaderHints(*ctx_ptr, &pending->resp,
                                                   [](const auto& t) { return t.name; });
                                    pending->req.Reply(pending->resp);
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
  Response& resp = pending->resp;
  resp.responses.resize(request.topic_data.size());
  std::vector<Appended> appended;
  bool any_error = false;
  // ACLs: a transactional producer needs WRITE on its transactional id
  // (every partition fails otherwise), then WRITE on each topic.
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
      PartitionResponse* out = &topic_resp.partition_responses[p];
      Offset last{-1};
      uint64_t state = 0;
      auto partition = AppendPartition(topic.get(), topic_error, topic_message,
                                       topic_data.partition_data[p], version, acks, out, &last,
                                       &state);
      if (partition) {
        appended.push_back({out, std::move(partition), last, state});
      } else {
        any_error = true;
      }
    }
  }
  if (acks == 0) {
    if (any_error) pending->req.Close("acks=0 produce failed on some partition");
    else pending->req.NoResponse();
    return;
  }
  if (acks == -1) {
    std::erase_if(appended, [](const Appended& a) { return a.partition->high_watermark() > a.last_offset; });
    if (!appended.empty()) {  // some not committed yet
      WaitForCommit(ctx, std::move(pending), std::move(appended),
                    std::chrono::milliseconds(std::max(request.timeout_ms, 0)));
      return;
    }
  }
  AddLeaderHints(ctx, &resp, [](const auto& t) { return t.name; });
  pending->req.Reply(resp);
}

}  // namespace

// Versions 0-2 (message formats v0/v1) are up-converted. Clients that ask
// ApiVersions pick v3+; librdkafka < 2.1 (Debian's kcat) enables
// gzip/snappy/lz4 only when a broker lists Produce v0. Clients told the
// broker is older than 0.10 (api.version.request=false) send v0-2 without
// asking.
extern const ApiHandler kProduceHandler = MakeHandler<protocol::ProduceRequest, HandleProduce>(0, 10);

}  // namespace headrace::broker
