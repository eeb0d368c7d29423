// Answering group requests (and completing other group log writers, such as
// the transaction marker writer) once their records are durable. The group log
// (coordinator/base/group_log.h) is a Partition: its appends are fsynced by the
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
#include <vector>

#include "broker/api/handler.h"
#include "broker/coordinator/group/group_coordinator.h"
#include "broker/base/kafka_error.h"

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
                                  std::function<void(KafkaError)> done);

namespace group_log_wait_internal {
// Waits for each (log, end) in `logs` from index `i` on, one after the
// other (the ends were read before the first wait).
inline void WaitEach(BrokerContext& ctx,
                     std::shared_ptr<std::vector<std::pair<std::shared_ptr<Partition>, Offset>>> logs,
                     size_t i, std::shared_ptr<net::LoopExecutor> executor,
                     std::function<void(KafkaError)> done) {
  while (i < logs->size() && (*logs)[i].first->high_watermark() >= (*logs)[i].second) ++i;
  if (i == logs->size()) {
    done(KafkaError::kNone);
    return;
  }
  auto [log, end] = (*logs)[i];
  ctx.state->purgatory().Wait(
      {{log, Watermark::kHighWatermark, end}}, Purgatory::Clock::now() + kOffsetsCommitTimeout,
      executor, [&ctx, logs, i, executor, log, end, done = std::move(done)](WakeReason) mutable {
        if (log->high_watermark() >= end) {
          return WaitEach(ctx, std::move(logs), i + 1, std::move(executor), std::move(done));
        }
        done(log->offline() ? KafkaError::kKafkaStorageError : KafkaError::kRequestTimedOut);
      });
}
}  // namespace group_log_wait_internal

// A coordinator log and the offset it must be committed up to.
using LogCommitPoint = std::pair<std::shared_ptr<Partition>, Offset>;

// Calls `done` once every log of `points` is committed up to its offset,
// with the errors and timing of WhenGroupLogCommitted (any coordinator
// log: the group, share state). Exactly once.
inline void WhenLogsCommitted(BrokerContext& ctx, std::vector<LogCommitPoint> points,
                              std::shared_ptr<net::LoopExecutor> executor,
                              std::function<void(KafkaError)> done) {
  group_log_wait_internal::WaitEach(
      ctx, std::make_shared<std::vector<LogCommitPoint>>(std::move(points)), 0,
      std::move(executor), std::move(done));
}

// The commit points of the logs of `touched` at their current ends (null
// entries skipped, each log once).
inline std::vector<LogCommitPoint> GroupLogEnds(
    const std::vector<std::shared_ptr<group::GroupCoordinator>>& touched) {
  std::vector<LogCommitPoint> logs;
  for (const auto& groups : touched) {
    if (groups == nullptr) continue;
    std::shared_ptr<Partition> log = groups->log_partition();
    bool seen = false;
    for (const auto& l : logs) seen = seen || l.first == log;
    if (!seen) logs.emplace_back(log, log->log_end_offset());
  }
  return logs;
}

// WhenGroupLogCommitted for the logs of several coordinators (a request
// that touched groups of several partitions); null entries are skipped.
inline void WhenGroupLogsCommitted(
    BrokerContext& ctx, const std::vector<std::shared_ptr<group::GroupCoordinator>>& touched,
    std::shared_ptr<net::LoopExecutor> executor, std::function<void(KafkaError)> done) {
  WhenLogsCommitted(ctx, GroupLogEnds(touched), std::move(executor), std::move(done));
}

inline void WhenGroupLogCommitted(BrokerContext& ctx,
                                  const std::shared_ptr<group::GroupCoordinator>& groups,
                                  std::shared_ptr<net::LoopExecutor> executor,
                                  std::function<void(KafkaError)> done) {
  WhenGroupLogsCommitted(ctx, {groups}, std::move(executor), std::move(done));
}

// Replies `resp` once every log of `points` is committed up to its offset
// (ReplyWhenGroupLogCommitted: the logs of the group coordinators it
// `touched`, up to their current ends; null entries: nothing to wait for).
// If that does not happen within kOffsetsCommitTimeout, on shutdown, or
// because a log went offline, `fail(resp, error)` first marks the answer
// (REQUEST_TIMED_OUT or KAFKA_STORAGE_ERROR). The reply is sent on the
// request's own I/O thread.
template <typename Resp, typename Fail>
void ReplyWhenLogsCommitted(BrokerContext& ctx, std::vector<LogCommitPoint> points, Request req,
                            Resp resp, Fail fail) {
  auto executor = req.executor();
  auto answer = std::make_shared<std::pair<Request, Resp>>(std::move(req), std::move(resp));
  WhenLogsCommitted(ctx, std::move(points), std::move(executor), [answer, fail](KafkaError e) {
    if (e != KafkaError::kNone) fail(answer->second, e);
    answer->first.Reply(answer->second);
  });
}
template <typename Resp, typename Fail>
void ReplyWhenGroupLogCommitted(BrokerContext& ctx,
                                const std::vector<std::shared_ptr<group::GroupCoordinator>>& touched,
                                Request req, Resp resp, Fail fail) {
  ReplyWhenLogsCommitted(ctx, GroupLogEnds(touched), std::move(req), std::move(resp), fail);
}

}  // namespace headrace::broker
