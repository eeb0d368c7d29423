// AlterPartitionReassignments (key 45) and ListPartitionReassignments (key
// 46), v0 (KIP-455). In cluster mode the control plane carries them out
// (control requests "alter_reassignments" / "list_reassignments",
// docs/cluster.md "Partition reassignment"): Alter answers once the
// controller has started (or cancelled) each partition's reassignment, not
// when it completes; List reads the ongoing ones from ZooKeeper. Per
// partition: NONE, UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT
// (empty or duplicate list, unregistered broker), NO_REASSIGNMENT_IN_PROGRESS
// (a cancel with nothing to cancel), REQUEST_TIMED_OUT (the controller did
// not answer in time). A single node has one possible assignment, itself:
// asking for it is a no-op, anything else INVALID_REPLICA_ASSIGNMENT, and
// nothing is ever in progress.
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include "broker/api/cluster_lookup.h"
#include "broker/api/authorize.h"
#include "broker/api/handler.h"
#include "broker/base/json.h"
#include "broker/base/kafka_error.h"

namespace headrace::broker {
namespace {

using AlterReq = protocol::AlterPartitionReassignmentsRequest;
using AlterResp = protocol::AlterPartitionReassignmentsResponse;
using ListReq = protocol::ListPartitionReassignmentsRequest;
using ListResp = protocol::ListPartitionReassignmentsResponse;

void AddAlter(AlterResp* resp, const std::string& topic, int32_t partition, KafkaError e,
              std::optional<std::string> message) {
  AlterResp::ReassignableTopicResponse* t = nullptr;
  for (auto& r : resp->responses)
    if (r.name == topic) t = &r;
  if (t == nullptr) {
    t = &resp->responses.emplace_back();
    t->name = topic;
  }
  AlterResp::ReassignablePartitionResponse p;
  p.partition_index = partition;
  p.error_code = Code(e);
  p.error_message = e == KafkaError::kNone ? std::nullopt : std::move(message);
  t->partitions.push_back(std::move(p));
}

void AlterSingleNode(BrokerContext& ctx, const AlterReq& req, Request request) {
  AlterResp resp;
  resp.error_message = std::nullopt;
  for (const auto& t : req.topics) {
    for (const auto& p : t.partitions) {
      if (ctx.topics().FindPartition(t.name, p.partition_index) == nullptr) {
        AddAlter(&resp, t.name, p.partition_index, KafkaError::kUnknownTopicOrPartition,
                 "unknown topic or partition");
      } else if (!p.replicas) {
        AddAlter(&resp, t.name, p.partition_index, KafkaError::kNoReassignmentInProgress,
                 "no reassignment is in progress for this partition");
      } else if (*p.replicas == std::vector<int32_t>{ctx.node_id}) {
        AddAlter(&resp, t.name, p.partition_index, KafkaError::kNone, std::nullopt);
      } else {
        AddAlter(&resp, t.name, p.partition_index, KafkaError::kInvalidReplicaAssignment,
                 "a single node can only hold replicas on broker " +
                     std::to_string(ctx.node_id));
      }
    }
  }
  request.Reply(resp);
}

void HandleAlter(BrokerContext& ctx, AlterReq& req, Request request) {
  if (!AuthorizedOnCluster(ctx, request, AclOperation::kAlter)) {  // ACLs
    AlterResp resp;
    resp.error_code = Code(KafkaError::kClusterAuthorizationFailed);
    resp.error_message = "Cluster authorization failed.";
    request.Reply(resp);
    return;
  }
  if (ctx.state->cluster() == nullptr) return AlterSingleNode(ctx, req, std::move(request));
  json::Array list;
  for (const auto& t : req.topics) {
    for (const auto& p : t.partitions) {
      json::Value replicas = nullptr;
      if (p.replicas) {
        json::Array ids;
        for (int32_t id : *p.replicas) ids.push_back(json::Value(int64_t{id}));
        replicas = json::Value(std::move(ids));
      }
      list.push_back(json::Value(json::Object{{"topic", t.name},
                                              {"partition", p.partition_index},
                                              {"replicas", std::move(replicas)}}));
    }
  }
  std::string payload = json::Write(json::Value(json::Object{
      {"partitions", json::Value(std::move(list))}, {"timeout_ms", int64_t{req.timeout_ms}}}));
  auto asked = std::make_shared<AlterReq>(std::move(req));
  SubmitControlRequest(
      ctx, request, "alter_reassignments", std::move(payload), asked->timeout_ms + 1000,
      [request, asked](bool ok, const std::string& result) {
        AlterResp resp;
        resp.error_message = std::nullopt;
        std::set<std::pair<std::string, int32_t>> answered;
        if (ok) {
          auto parsed = json::Parse(result);
          const json::Value* list = parsed.ok() ? parsed->Find("partitions") : nullptr;
          if (list != nullptr && list->is_array()) {
            for (const json::Value& r : list->as_array()) {
              const json::Value* t = r.Find("topic");
              const json::Value* p = r.Find("partition");
              const json::Value* c = r.Find("error_code");
              const json::Value* m = r.Find("error_message");
              if (!t || !t->is_string() || !p || !p->is_int() || !c || !c->is_int()) continue;
              const int32_t partition = static_cast<int32_t>(p->as_int());
              if (!answered.insert({t->as_string(), partition}).second) continue;
              AddAlter(&resp, t->as_string(), partition, static_cast<KafkaError>(c->as_int()),
                       m && m->is_string() ? std::optional<std::string>(m->as_string())
                                           : std::nullopt);
            }
          }
        }
        for (const auto& t : asked->topics) {  // anything the control plane left out
          for (const auto& p : t.partitions) {
            if (!answered.insert({t.name, p.partition_index}).second) continue;
            AddAlter(&resp, t.name, p.partition_index, KafkaError::kRequestTimedOut,
                     ok ? "no answer for this partition" : result);
          }
        }
        request.Reply(resp);
      });
}

std::vector<int32_t> Ids(const json::Value* v) {
  std::vector<int32_t> out;
  if (v == nullptr || !v->is_array()) return out;
  for (const json::Value& id : v->as_array())
    if (id.is_int()) out.push_back(static_cast<int32_t>(id.as_int()));
  return out;
}

void HandleList(BrokerContext& ctx, ListReq& req, Request request) {
  if (!AuthorizedOnCluster(ctx, request, AclOperation::kDescribe)) {  // ACLs
    ListResp resp;
    resp.error_code = Code(KafkaError::kClusterAuthorizationFailed);
    resp.error_message = "Cluster authorization failed.";
    request.Reply(resp);
    return;
  }
  if (ctx.state->cluster() == nullptr) {  // nothing is ever in progress on one node
    ListResp resp;
    resp.error_message = std::nullopt;
    request.Reply(resp);
    return;
  }
  json::Value partitions = nullptr;
  if (req.topics) {
    json::Array list;
    for (const auto& t : *req.topics)
      for (int32_t p : t.partition_indexes)
        list.push_back(json::Value(json::Object{{"topic", t.name}, {"partition", p}}));
    partitions = json::Value(std::move(list));
  }
  std::string payload =
      json::Write(json::Value(json::Object{{"partitions", std::move(partitions)}}));
  SubmitControlRequest(
      ctx, request, "list_reassignments", std::move(payload), req.timeout_ms,
      [request](bool ok, const std::string& result) {
        ListResp resp;
        resp.error_message = std::nullopt;
        auto parsed = ok ? json::Parse(result) : Result<json::Value>(Status::IOError(result));
        const json::Value* list = parsed.ok() ? parsed->Find("partitions") : nullptr;
        if (list == nullptr || !list->is_array()) {
          resp.error_code = Code(KafkaError::kRequestTimedOut);
          resp.error_message = ok ? "malformed answer from the control plane" : result;
          request.Reply(resp);
          return;
        }
        std::map<std::string, std::vector<ListResp::OngoingPartitionReassignment>> by_topic;
        for (const json::Value& r : list->as_array()) {
          const json::Value* t = r.Find("topic");
          const json::Value* p = r.Find("partition");
          if (!t || !t->is_string() || !p || !p->is_int()) continue;
          ListResp::OngoingPartitionReassignment o;
          o.partition_index = static_cast<int32_t>(p->as_int());
          o.replicas = Ids(r.Find("replicas"));
          o.adding_replicas = Ids(r.Find("adding_replicas"));
          o.removing_replicas = Ids(r.Find("removing_replicas"));
          by_topic[t->as_string()].push_back(std::move(o));
        }
        for (auto& [name, parts] : by_topic) {
          ListResp::OngoingTopicReassignment& t = resp.topics.emplace_back();
          t.name = name;
          t.partitions = std::move(parts);
        }
        request.Reply(resp);
      });
}

}  // namespace

extern const ApiHandler kAlterPartitionReassignmentsHandler =
    MakeHandler<AlterReq, HandleAlter>(0, 0);
extern const ApiHandler kListPartitionReassignmentsHandler =
    MakeHandler<ListReq, HandleList>(0, 0);

}  // namespace headrace::broker
