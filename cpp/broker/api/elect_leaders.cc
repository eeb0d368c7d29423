// ElectLeaders (key 43), v0..2 (KIP-183, KIP-460): elect the preferred
// replica (election_type 0; v0 has no type) or, for partitions whose leader
// is not live, any replica (1 = unclean: an ISR member if one is live, else
// any live replica, losing what it lacks). A null partition list means every
// partition. In cluster mode the controller decides (control request
// "elect_leaders", docs/cluster.md); per partition: NONE,
// ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE,
// ELIGIBLE_LEADERS_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION, or
// REQUEST_TIMED_OUT when the controller did not answer in time. A single
// node is the preferred and only leader of everything: ELECTION_NOT_NEEDED.
#include <map>
#include <string>
#include <utility>

#include "broker/api/cluster_lookup.h"
#include "broker/api/authorize.h"
#include "broker/api/handler.h"
#include "broker/base/json.h"
#include "broker/base/kafka_error.h"

namespace headrace::broker {
namespace {

using Req = protocol::ElectLeadersRequest;
using Resp = protocol::ElectLeadersResponse;

void Add(Resp* resp, const std::string& topic, int32_t partition, KafkaError e,
         std::optional<std::string> message) {
  Resp::ReplicaElectionResult* t = nullptr;
  for (auto& r : resp->replica_election_results) {
    if (r.topic == topic) t = &r;
  }
  if (t == nullptr) {
    t = &resp->replica_election_results.emplace_back();
    t->topic = topic;
  }
  Resp::PartitionResult p;
  p.partition_id = partition;
  p.error_code = Code(e);
  p.error_message = e == KafkaError::kNone ? std::nullopt : std::move(message);
  t->partition_result.push_back(std::move(p));
}

void SingleNode(BrokerContext& ctx, const Req& req, Request request) {
  Resp resp;
  resp.error_code = Code(KafkaError::kNone);
  if (req.topic_partitions) {
    for (const auto& t : *req.topic_partitions) {
      for (int32_t p : t.partitions) {
        const bool known = ctx.topics().FindPartition(t.topic, p) != nullptr;
        Add(&resp, t.topic, p,
            known ? KafkaError::kElectionNotNeeded : KafkaError::kUnknownTopicOrPartition,
            known ? "this single node leads every partition" : "unknown topic or partition");
      }
    }
  }
  request.Reply(resp);
}

void HandleElectLeaders(BrokerContext& ctx, Req& req, Request request) {
  if (req.election_type != 0 && req.election_type != 1) {
    Resp resp;
    resp.error_code = Code(KafkaError::kInvalidRequest);
    request.Reply(resp);
    return;
  }
  if (!AuthorizedOnCluster(ctx, request, AclOperation::kAlter)) {  // ACLs
    Resp resp;
    resp.error_code = Code(KafkaError::kClusterAuthorizationFailed);
    if (req.topic_partitions) {
      for (const auto& t : *req.topic_partitions) {
        auto& rt = resp.replica_election_results.emplace_back();
        rt.topic = t.topic;
        for (int32_t p : t.partitions) {
          auto& rp = rt.partition_result.emplace_back();
          rp.partition_id = p;
          rp.error_code = Code(KafkaError::kClusterAuthorizationFailed);
          rp.error_message = "Cluster authorization failed.";
        }
      }
    }
    request.Reply(resp);
    return;
  }
  if (ctx.state->cluster() == nullptr) return SingleNode(ctx, req, std::move(request));
  json::Value partitions = nullptr;
  if (req.topic_partitions) {
    json::Array list;
    for (const auto& t : *req.topic_partitions) {
      for (int32_t p : t.partitions) {
        list.push_back(json::Value(json::Object{{"topic", t.topic}, {"partition", p}}));
      }
    }
    partitions = json::Value(std::move(list));
  }
  std::string payload = json::Write(json::Value(
      json::Object{{"election_type", int64_t{req.election_type}},
                   {"partitions", std::move(partitions)},
                   {"timeout_ms", int64_t{req.timeout_ms}}}));
  auto asked = std::make_shared<Req>(std::move(req));
  SubmitControlRequest(
      ctx, request, "elect_leaders", std::move(payload), asked->timeout_ms + 1000,
      [request, asked](bool ok, const std::string& result) {
        Resp resp;
        resp.error_code = Code(KafkaError::kNone);
        std::map<std::pair<std::string, int32_t>, bool> answered;
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
              Add(&resp, t->as_string(), partition, static_cast<KafkaError>(c->as_int()),
                  m && m->is_string() ? std::optional<std::string>(m->as_string()) : std::nullopt);
              answered[{t->as_string(), partition}] = true;
            }
          }
        }
        if (asked->topic_partitions) {  // anything the control plane left out
          for (const auto& t : *asked->topic_partitions) {
            for (int32_t p : t.partitions) {
              if (!answered.count({t.topic, p})) {
                Add(&resp, t.topic, p, KafkaError::kRequestTimedOut,
                    ok ? "no answer for this partition" : result);
              }
            }
          }
        }
        request.Reply(resp);
      });
}

}  // namespace

extern const ApiHandler kElectLeadersHandler =
    MakeHandler<Req, HandleElectLeaders>(0, 2);

}  // namespace headrace::broker
