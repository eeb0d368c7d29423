// What the handlers of the five share-state RPCs share (KIP-932, keys
// 83..87: InitializeShareGroupState, ReadShareGroupState,
// WriteShareGroupState, DeleteShareGroupState, ReadShareGroupStateSummary;
// v0). A share-partition leader (share_state_client.h on another broker)
// sends them to the broker that runs the share coordinator of a key
// (coordinator/share/share_coordinator.h); the client tools of Kafka never
// do.
//
// All five requests have one shape: a group, and topics (by id) with
// partitions. Their answers mirror it: one result per requested topic, in
// the request's order, one per requested partition with an error code and
// an error message (null when there is no error). The checks they share, in
// this order (ResolveShareStateTarget):
//   - CLUSTER_ACTION on the CLUSTER, once per request (AuthorizedForShareState):
//     without it every partition answers CLUSTER_AUTHORIZATION_FAILED;
//   - an empty group id or a negative partition: INVALID_REQUEST;
//   - the key's share coordinator must run here: COORDINATOR_NOT_AVAILABLE
//     (no share coordinators, or __share_group_state has no partitions yet),
//     NOT_COORDINATOR (cluster mode: another broker leads the key's
//     partition of __share_group_state);
//   - the topic partition must exist: UNKNOWN_TOPIC_OR_PARTITION (as
//     Kafka's ShareCoordinatorShard checks its metadata image).
//
// Each answer goes out once the coordinators' logs it touched (or, for the
// reads, that held the state read) are committed up to their end at the
// time (api/group_log_wait.h ReplyWhenLogsCommitted): a state is never
// answered or acknowledged that the log could still lose. If that fails,
// the partitions without an error answer REQUEST_TIMED_OUT or
// KAFKA_STORAGE_ERROR (FailUnanswered).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "broker/api/authorize.h"
#include "broker/api/group_log_wait.h"
#include "broker/api/handler.h"
#include "broker/base/kafka_error.h"
#include "broker/coordinator/share/share_coordinators.h"

namespace headrace::broker::share_rpc {

// One requested share-partition resolved to its coordinator here, or the
// error to answer for it (`coordinator` null).
struct Target {
  share::SharePartitionKey key;
  std::shared_ptr<share::ShareCoordinator> coordinator;
  KafkaError error = KafkaError::kNone;
  std::optional<std::string> message;
};

// Whether the topic partition exists (this broker's topics, or in cluster
// mode the cluster's view).
inline bool TopicPartitionKnown(const BrokerContext& ctx, const Uuid& topic_id,
                                int32_t partition) {
  if (topic_id.is_zero()) return false;
  int32_t partitions = 0;
  if (std::shared_ptr<const Topic> topic = ctx.topics().FindTopicById(topic_id)) {
    partitions = topic->partition_count();
  } else if (ClusterState* cluster = ctx.state->cluster()) {
    auto view = cluster->view();
    if (const TopicView* v = view->FindTopicById(topic_id)) {
      partitions = static_cast<int32_t>(v->partitions.size());
    }
  }
  return partition >= 0 && partition < partitions;
}

inline Target ResolveShareStateTarget(const BrokerContext& ctx, const std::string& group,
                                      const Uuid& topic_id, int32_t partition) {
  Target t;
  t.key = share::SharePartitionKey{group, topic_id, partition};
  if (group.empty()) {
    t.error = KafkaError::kInvalidRequest;
    t.message = "The group id must be specified and non-empty.";
  } else if (partition < 0) {
    t.error = KafkaError::kInvalidRequest;
    t.message = "The partition id cannot be a negative number.";
  } else if (ctx.share_coordinators == nullptr) {
    t.error = KafkaError::kCoordinatorNotAvailable;
  } else if (auto found = ctx.share_coordinators->For(share::ShareCoordinatorKey(t.key));
             found.coordinator == nullptr) {
    t.error = found.error;
  } else if (!TopicPartitionKnown(ctx, topic_id, partition)) {
    t.error = KafkaError::kUnknownTopicOrPartition;
  } else {
    t.coordinator = std::move(found.coordinator);
  }
  return t;
}

// CLUSTER_ACTION on the CLUSTER: these are inter-broker APIs (Kafka's
// KafkaApis authorizes them so; brokers are super users).
inline bool AuthorizedForShareState(const BrokerContext& ctx, const Request& req) {
  return AuthorizedOnCluster(ctx, req, AclOperation::kClusterAction);
}

// Adds `log` up to `end` to `points`, once per log (the largest end).
inline void AddCommitPoint(std::vector<LogCommitPoint>* points, std::shared_ptr<Partition> log,
                           Offset end) {
  for (LogCommitPoint& p : *points) {
    if (p.first == log) {
      if (p.second < end) p.second = end;
      return;
    }
  }
  points->emplace_back(std::move(log), end);
}

// The point a read must wait for: `c`'s log up to its end now (a state in
// memory may still be uncommitted).
inline void AddReadPoint(std::vector<LogCommitPoint>* points,
                         const std::shared_ptr<share::ShareCoordinator>& c) {
  AddCommitPoint(points, c->log_partition(), c->log_partition()->log_end_offset());
}

// The answer's skeleton: one result per requested topic and one partition
// result per requested partition, in the request's order, all without an
// error.
template <typename Resp, typename Req>
Resp MirrorRequest(const Req& request) {
  Resp resp;
  resp.results.reserve(request.topics.size());
  for (const auto& t : request.topics) {
    auto& out = resp.results.emplace_back();
    out.topic_id = t.topic_id;
    out.partitions.reserve(t.partitions.size());
    for (const auto& p : t.partitions) out.partitions.emplace_back().partition = p.partition;
  }
  return resp;
}

// Marks one partition result with `e` (and `message`).
template <typename PartitionResult>
void SetError(PartitionResult& out, KafkaError e, std::optional<std::string> message = {}) {
  out.error_code = Code(e);
  out.error_message = std::move(message);
}

// Every partition of `resp` answers `e` (the refused request).
template <typename Resp>
void FailAll(Resp& resp, KafkaError e) {
  for (auto& t : resp.results)
    for (auto& p : t.partitions) SetError(p, e);
}

// The fail callback of ReplyWhenLogsCommitted: the partitions that had no
// error answer `e` (REQUEST_TIMED_OUT, KAFKA_STORAGE_ERROR).
template <typename Resp>
void FailUnanswered(Resp& resp, KafkaError e) {
  for (auto& t : resp.results)
    for (auto& p : t.partitions)
      if (p.error_code == 0) SetError(p, e);
}

// The frame of every share-state handler: without CLUSTER_ACTION every
// partition answers CLUSTER_AUTHORIZATION_FAILED at once; otherwise each
// requested partition is resolved (ResolveShareStateTarget; its error set
// on its result) and `each(partition, result, target, &points)` runs for
// those whose coordinator is here, adding the commit points the answer
// waits for (AddCommitPoint / AddReadPoint). The answer goes out once they
// are committed (FailUnanswered otherwise).
template <typename Resp, typename Req, typename Each>
void AnswerEachPartition(BrokerContext& ctx, const Req& request, Request req, Each each) {
  Resp resp = MirrorRequest<Resp>(request);
  if (!AuthorizedForShareState(ctx, req)) {
    FailAll(resp, KafkaError::kClusterAuthorizationFailed);
    return req.Reply(resp);
  }
  std::vector<LogCommitPoint> points;
  for (size_t i = 0; i < request.topics.size(); ++i) {
    const auto& t = request.topics[i];
    for (size_t j = 0; j < t.partitions.size(); ++j) {
      const auto& p = t.partitions[j];
      auto& out = resp.results[i].partitions[j];
      Target target = ResolveShareStateTarget(ctx, request.group_id, t.topic_id, p.partition);
      if (!target.coordinator) {
        SetError(out, target.error, std::move(target.message));
        continue;
      }
      each(p, out, target, &points);
    }
  }
  ReplyWhenLogsCommitted(ctx, std::move(points), std::move(req), std::move(resp),
                         FailUnanswered<Resp>);
}

// A change's outcome: its error on `out`, or its commit point.
template <typename PartitionResult>
void AddChange(std::vector<LogCommitPoint>* points, PartitionResult& out,
               const share::ShareCoordinator& c, const share::SharePersisted& done) {
  if (done.error != KafkaError::kNone) return SetError(out, done.error);
  AddCommitPoint(points, c.log_partition(), Offset(done.end));
}

}  // namespace headrace::broker::share_rpc
