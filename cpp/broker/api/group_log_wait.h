// Answering group requests (and completing other group log writers, such as
// the transaction marker writer) once their records are durable. The group log
// (group/group_log.h) is a Partition: its appends are fsynced by the
// flusher, which then moves its high watermark. A handler that changed
// committed offsets or deleted groups answers through
// ReplyWhenGroupLogCommitted, which parks the answer in the purgatory until
// the HW passes the log end read after the change (no fsync on the network
// thread and none under the coordinator's mutex).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <utility>

#include "broker/api/handler.h"
#include "broker/group/group_coordinator.h"
#include "broker/kafka_error.h"

namespace headrace::broker {

// How long a group request waits for its records to be committed (Kafka's
// offsets.commit.timeout.ms default).
inline constexpr std::chrono::milliseconds kOffsetsCommitTimeout{5000};

// Calls `done(NONE)` once `groups`' log is committed up to its end read
// now, or `done(REQUEST_TIMED_OUT)` if that does not happen within
// kOffsetsCommitTimeout or before shutdown, `done(KAFKA_STORAGE_ERROR)` if
// the log went offline. Exactly once; at once when already committed, else
// on `executor` (null: on the thread that completes the wait). For callers
// that are not handlers, e.g. a transaction marker writer after
// GroupCoordinator::CompleteTxn.
inline void WhenGroupLogCommitted(BrokerContext& ctx,
                                  const std::shared_ptr<group::GroupCoordinator>& groups,
                                  std::shared_ptr<net::LoopExecutor> executor,
                                  std::function<void(KafkaError)> done) {
  std::shared_ptr<Partition> log = groups->log_partition();
  const Offset end = log->log_end_offset();
  if (log->high_watermark() >= end) {
    done(KafkaError::kNone);
    return;
  }
  ctx.state->purgatory().Wait(
      {{log, Watermark::kHighWatermark, end}}, Purgatory::Clock::now() + kOffsetsCommitTimeout,
      std::move(executor), [log, end, done = std::move(done)](WakeReason) {
        if (log->high_watermark() >= end) return done(KafkaError::kNone);
        done(log->offline() ? KafkaError::kKafkaStorageError : KafkaError::kRequestTimedOut);
      });
}

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
  auto executor = req.executor();
  auto answer = std::make_shared<std::pair<Request, Resp>>(std::move(req), std::move(resp));
  WhenGroupLogCommitted(ctx, groups, std::move(executor), [answer, fail](KafkaError e) {
    if (e != KafkaError::kNone) fail(answer->second, e);
    answer->first.Reply(answer->second);
  });
}

}  // namespace headrace::broker
