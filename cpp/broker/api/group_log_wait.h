// Answering group requests once their records are durable. The group log
// (group/group_log.h) is a Partition: its appends are fsynced by the
// flusher, which then moves its high watermark. A handler that changed
// committed offsets or deleted groups answers through
// ReplyWhenGroupLogCommitted, which parks the answer in the purgatory until
// the HW passes the log end read after the change (no fsync on the network
// thread and none under the coordinator's mutex).
#pragma once

#include <chrono>
#include <memory>
#include <utility>

#include "broker/api/handler.h"
#include "broker/group/group_coordinator.h"
#include "broker/kafka_error.h"

namespace headrace::broker {

// How long a group request waits for its records to be committed (Kafka's
// offsets.commit.timeout.ms default).
inline constexpr std::chrono::milliseconds kOffsetsCommitTimeout{5000};

// Replies `resp` once the group log is committed up to its current end. If
// that does not happen within kOffsetsCommitTimeout, on shutdown, or because
// the log went offline, `fail(resp, error)` first marks the answer
// (REQUEST_TIMED_OUT or KAFKA_STORAGE_ERROR). The reply is sent on the
// request's own I/O thread.
template <typename Resp, typename Fail>
void ReplyWhenGroupLogCommitted(BrokerContext& ctx, Request req, Resp resp, Fail fail) {
  const std::shared_ptr<group::GroupCoordinator> groups = ctx.coordinator();
  if (groups == nullptr) {
    req.Reply(resp);
    return;
  }
  std::shared_ptr<Partition> log = groups->log_partition();
  const Offset end = log->log_end_offset();
  if (log->high_watermark() >= end) {
    req.Reply(resp);
    return;
  }
  auto executor = req.executor();
  auto answer = std::make_shared<std::pair<Request, Resp>>(std::move(req), std::move(resp));
  ctx.state->purgatory().Wait(
      {{log, Watermark::kHighWatermark, end}}, Purgatory::Clock::now() + kOffsetsCommitTimeout,
      std::move(executor), [answer, log, end, fail](WakeReason) {
        if (log->high_watermark() < end) {
          fail(answer->second,
               log->offline() ? KafkaError::kKafkaStorageError : KafkaError::kRequestTimedOut);
        }
        answer->first.Reply(answer->second);
      });
}

}  // namespace headrace::broker
