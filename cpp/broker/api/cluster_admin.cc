#include "broker/api/cluster_admin.h"

#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "broker/api/authorize.h"
#include "broker/api/cluster_lookup.h"
#include "broker/base/json.h"
#include "broker/base/kafka_error.h"
#include "broker/partition/topic_name.h"

namespace headrace::broker {
namespace {

// One per-topic result of the control plane.
struct TopicResult {
  int16_t error_code = 0;
  std::optional<std::string> error_message;
  std::optional<std::string> topic_id;
  int64_t num_partitions = -1;
  int64_t replication_factor = -1;
};

// {"topics": [{"name", "error_code", "error_message", ...}]} by name. A
// control plane that did not answer (`ok` false) or answered nonsense
// fails every topic with REQUEST_TIMED_OUT / UNKNOWN_SERVER_ERROR.
std::map<std::string, TopicResult> ParseResults(bool ok, const std::string& result,
                                                const std::vector<std::string>& names) {
  std::map<std::string, TopicResult> out;
  KafkaError fallback = ok ? KafkaError::kUnknownServerError : KafkaError::kRequestTimedOut;
  std::string message = ok ? "the control plane's answer could not be read" : result;
  if (ok) {
    auto parsed = json::Parse(result);
    const json::Value* topics = parsed.ok() ? parsed->Find("topics") : nullptr;
    if (topics != nullptr && topics->is_array()) {
      for (const json::Value& t : topics->as_array()) {
        const json::Value* name = t.Find("name");
        if (name == nullptr || !name->is_string()) continue;
        TopicResult r;
        if (const json::Value* e = t.Find("error_code"); e && e->is_int()) {
          r.error_code = static_cast<int16_t>(e->as_int());
        }
        if (const json::Value* m = t.Find("error_message"); m && m->is_string()) {
          r.error_message = m->as_string();
        }
        if (const json::Value* id = t.Find("topic_id"); id && id->is_string()) {
          r.topic_id = id->as_string();
        }
        if (const json::Value* n = t.Find("num_partitions"); n && n->is_int()) {
          r.num_partitions = n->as_int();
        }
        if (const json::Value* n = t.Find("replication_factor"); n && n->is_int()) {
          r.replication_factor = n->as_int();
        }
        out[name->as_string()] = std::move(r);
      }
    }
  }
  for (const std::string& n : names) {
    if (!out.count(n)) out[n] = TopicResult{Code(fallback), message, std::nullopt, -1, -1};
  }
  return out;
}

json::Value IdArray(const std::vector<int32_t>& ids) {
  json::Array a;
  for (int32_t id : ids) a.push_back(json::Value(id));
  return json::Value(std::move(a));
}

}  // namespace

void ClusterCreateTopics(BrokerContext& ctx, protocol::CreateTopicsRequest& req, Request request) {
  using Resp = protocol::CreateTopicsResponse;
  auto resp = std::make_shared<Resp>();
  std::vector<std::string> forwarded;
  json::Array topics;
  std::set<std::string> seen, reported;
  std::multiset<std::string> counts;
  for (const auto& t : req.topics) counts.insert(t.name);
  auto fail = [&](const std::string& name, KafkaError e, std::string message) {
    Resp::CreatableTopicResult r;
    r.name = name;
    r.error_code = Code(e);
    r.error_message = std::move(message);
    r.configs = std::nullopt;
    resp->topics.push_back(std::move(r));
  };
  for (const auto& t : req.topics) {
    if (counts.count(t.name) > 1) {
      if (reported.insert(t.name).second) {
        fail(t.name, KafkaError::kInvalidRequest,
             "Create topics request contains multiple entries for the topic " + t.name + ".");
      }
      continue;
    }
    if (Status st = MayCreateTopic(ctx, request, t.name); !st.ok()) {
      fail(t.name, ToKafkaError(st), st.message());
      continue;
    }
    if (Status st = ValidateTopicName(t.name); !st.ok()) {
      fail(t.name, ToKafkaError(st), st.message());
      continue;
    }
    if (Status st = CheckClientOpOnInternalTopic(t.name, InternalTopicOp::kCreate); !st.ok()) {
      fail(t.name, ToKafkaError(st), st.message());
      continue;
    }
    json::Object configs;
    ConfigMap config_map;
    Status bad;
    for (const auto& c : t.configs) {
      if (!c.value) {
        bad = KafkaStatus(KafkaError::kInvalidConfig, "Null value not supported for topic configs: " + c.name);
        break;
      }
      config_map[c.name] = *c.value;
      configs[c.name] = json::Value(*c.value);
    }
    if (bad.ok()) {
      auto applied = ApplyTopicConfigs(ctx.config().topic_defaults(), config_map);
      if (!applied.ok()) bad = applied.status();
    }
    if (!bad.ok()) {
      fail(t.name, ToKafkaError(bad), bad.message());
      continue;
    }
    json::Value assignments = nullptr;
    if (!t.assignments.empty()) {
      json::Object a;
      for (const auto& r : t.assignments) a[std::to_string(r.partition_index)] = IdArray(r.broker_ids);
      assignments = json::Value(std::move(a));
    }
    const int64_t partitions = t.num_partitions == -1 ? ctx.config().num_partitions : t.num_partitions;
    const int64_t rf = t.replication_factor == -1 ? ctx.config().default_replication_factor
                                                  : t.replication_factor;
    topics.push_back(json::Value(json::Object{{"name", t.name},
                                              {"num_partitions", t.assignments.empty() ? partitions : int64_t{-1}},
                                              {"replication_factor", t.assignments.empty() ? rf : int64_t{-1}},
                                              {"assignments", std::move(assignments)},
                                              {"configs", json::Value(std::move(configs))},
                                              {"validate_only", req.validate_only}}));
    forwarded.push_back(t.name);
  }
  if (forwarded.empty()) {
    request.Reply(*resp);
    return;
  }
  std::string payload = json::Write(json::Value(json::Object{
      {"topics", json::Value(std::move(topics))}, {"timeout_ms", int64_t{req.timeout_ms}}}));
  SubmitControlRequest(ctx, request, "create_topics", std::move(payload), req.timeout_ms,
                       [resp, request, forwarded](bool ok, const std::string& result) {
                         auto results = ParseResults(ok, result, forwarded);
                         for (const std::string& name : forwarded) {
                           const TopicResult& r = results[name];
                           Resp::CreatableTopicResult out;
                           out.name = name;
                           out.error_code = r.error_code;
                           out.error_message = r.error_message;
                           if (r.error_code == 0) {
                             if (r.topic_id) {
                               if (auto id = Uuid::FromBase64(*r.topic_id); id.ok()) out.topic_id = *id;
                             }
                             out.num_partitions = static_cast<int32_t>(r.num_partitions);
                             out.replication_factor = static_cast<int16_t>(r.replication_factor);
                             out.configs.emplace();
                           } else {
                             out.configs = std::nullopt;
                           }
                           resp->topics.push_back(std::move(out));
                         }
                         request.Reply(*resp);
                       });
}

void ClusterDeleteTopics(BrokerContext& ctx, protocol::DeleteTopicsRequest& req, Request request) {
  using Resp = protocol::DeleteTopicsResponse;
  auto resp = std::make_shared<Resp>();
  auto view = ctx.state->cluster()->view();
  std::vector<std::string> names = req.topic_names;
  for (const auto& t : req.topics) {
    if (t.name && t.topic_id.is_zero()) {
      names.push_back(*t.name);
    } else if (!t.name && !t.topic_id.is_zero()) {
      if (const TopicView* found = view->FindTopicById(t.topic_id)) {
        names.push_back(found->name);
      } else {
        Resp::DeletableTopicResult r;
        r.name = std::nullopt;
        r.topic_id = t.topic_id;
        r.error_code = Code(KafkaError::kUnknownTopicId);
        r.error_message = "Topic id " + t.topic_id.ToBase64() + " not found";
        resp->responses.push_back(std::move(r));
      }
    } else {
      Resp::DeletableTopicResult r;
      r.name = t.name;
      r.topic_id = t.topic_id;
      r.error_code = Code(KafkaError::kInvalidRequest);
      r.error_message = "name a topic by exactly one of name and id";
      resp->responses.push_back(std::move(r));
    }
  }
  std::vector<std::string> forwarded;
  json::Array array;
  for (const std::string& name : names) {
    const TopicView* topic = view->FindTopic(name);
    Status st = RequireOnTopic(ctx, request, AclOperation::kDelete, name);  // ACLs
    if (st.ok()) st = CheckClientOpOnInternalTopic(name, InternalTopicOp::kDelete);
    if (!st.ok()) {
      Resp::DeletableTopicResult r;
      r.name = name;
      if (topic) r.topic_id = topic->id;
      r.error_code = Code(ToKafkaError(st));
      r.error_message = st.message();
      resp->responses.push_back(std::move(r));
      continue;
    }
    // A name missing from this broker's view is forwarded too: the view
    // trails ZooKeeper, so a topic created a moment ago (CreateTopics
    // answered) may not be in it yet. The control plane answers
    // UNKNOWN_TOPIC_OR_PARTITION for a name ZooKeeper does not hold.
    forwarded.push_back(name);
    array.push_back(json::Value(name));
  }
  if (forwarded.empty()) {
    request.Reply(*resp);
    return;
  }
  std::string payload = json::Write(json::Value(json::Object{{"topics", json::Value(std::move(array))}}));
  SubmitControlRequest(ctx, request, "delete_topics", std::move(payload), req.timeout_ms,
                       [resp, request, forwarded, view](bool ok, const std::string& result) {
                         auto results = ParseResults(ok, result, forwarded);
                         for (const std::string& name : forwarded) {
                           Resp::DeletableTopicResult r;
                           r.name = name;
                           const TopicResult& answer = results[name];
                           if (const TopicView* t = view->FindTopic(name)) {
                             r.topic_id = t->id;
                           } else if (answer.topic_id) {
                             if (auto id = Uuid::FromBase64(*answer.topic_id); id.ok()) r.topic_id = *id;
                           }
                           r.error_code = results[name].error_code;
                           r.error_message = results[name].error_message;
                           resp->responses.push_back(std::move(r));
                         }
                         request.Reply(*resp);
                       });
}

void ClusterCreatePartitions(BrokerContext& ctx, protocol::CreatePartitionsRequest& req,
                             Request request) {
  using Resp = protocol::CreatePartitionsResponse;
  auto resp = std::make_shared<Resp>();
  std::vector<std::string> forwarded;
  json::Array array;
  for (const auto& t : req.topics) {
    Status st = RequireOnTopic(ctx, request, AclOperation::kAlter, t.name);  // ACLs
    if (st.ok()) st = CheckClientOpOnInternalTopic(t.name, InternalTopicOp::kCreatePartitions);
    if (!st.ok()) {
      Resp::CreatePartitionsTopicResult r;
      r.name = t.name;
      r.error_code = Code(ToKafkaError(st));
      r.error_message = st.message();
      resp->results.push_back(std::move(r));
      continue;
    }
    json::Value assignments = nullptr;
    if (t.assignments) {
      json::Array a;
      for (const auto& r : *t.assignments) a.push_back(IdArray(r.broker_ids));
      assignments = json::Value(std::move(a));
    }
    array.push_back(json::Value(json::Object{{"name", t.name},
                                             {"count", int64_t{t.count}},
                                             {"assignments", std::move(assignments)},
                                             {"validate_only", req.validate_only}}));
    forwarded.push_back(t.name);
  }
  if (forwarded.empty()) {
    request.Reply(*resp);
    return;
  }
  std::string payload = json::Write(json::Value(json::Object{{"topics", json::Value(std::move(array))}}));
  SubmitControlRequest(ctx, request, "create_partitions", std::move(payload), req.timeout_ms,
                       [resp, request, forwarded](bool ok, const std::string& result) {
                         auto results = ParseResults(ok, result, forwarded);
                         for (const std::string& name : forwarded) {
                           Resp::CreatePartitionsTopicResult r;
                           r.name = name;
                           r.error_code = results[name].error_code;
                           r.error_message = results[name].error_message;
                           resp->results.push_back(std::move(r));
                         }
                         request.Reply(*resp);
                       });
}

Status CallControlPlane(const BrokerContext& ctx, const std::string& kind, json::Object payload) {
  ClusterState* cluster = ctx.state->cluster();
  auto done = std::make_shared<std::promise<std::pair<bool, std::string>>>();
  auto answer = done->get_future();
  const auto timeout = std::chrono::seconds(30);
  cluster->requests().Submit(kind, json::Write(json::Value(std::move(payload))),
                             ControlRequests::Clock::now() + timeout,
                             [done](bool ok, const std::string& result) {
                               done->set_value({ok, result});
                             });
  if (answer.wait_for(timeout + std::chrono::seconds(1)) != std::future_status::ready) {
    return KafkaStatus(KafkaError::kRequestTimedOut, "the control plane did not answer");
  }
  auto [ok, result] = answer.get();
  return ControlPlaneAnswer(ok, result);
}

Status ControlPlaneAnswer(bool ok, const std::string& result) {
  if (!ok) return KafkaStatus(KafkaError::kRequestTimedOut, "control plane: " + result);
  auto parsed = json::Parse(result);
  const json::Value* code = parsed.ok() ? parsed->Find("error_code") : nullptr;
  if (code == nullptr || !code->is_int()) {
    return KafkaStatus(KafkaError::kUnknownServerError, "control plane answered: " + result);
  }
  if (code->as_int() == 0) return Status::OK();
  const json::Value* message = parsed->Find("error_message");
  return KafkaStatus(static_cast<KafkaError>(code->as_int()),
                     message && message->is_string() ? message->as_string() : "");
}

Status ClusterAlterTopicConfig(const BrokerContext& ctx, const std::string& topic,
                               const std::function<Result<ConfigMap>(const ConfigMap&)>& next,
                               bool validate_only) {
  auto view = ctx.state->cluster()->view();
  const TopicView* t = view ? view->FindTopic(topic) : nullptr;
  if (t == nullptr) {
    return KafkaStatus(KafkaError::kUnknownTopicOrPartition, "Topic " + topic + " does not exist.");
  }
  HR_ASSIGN_OR_RETURN(ConfigMap configs, next(t->configs));
  HR_RETURN_IF_ERROR(ApplyTopicConfigs(*ctx.topics().defaults(), configs).status());
  if (validate_only) return Status::OK();
  json::Object values;
  for (const auto& [k, v] : configs) values[k] = json::Value(v);
  return CallControlPlane(ctx, "alter_topic_configs",
                          json::Object{{"topic", topic}, {"configs", json::Value(std::move(values))}});
}

}  // namespace headrace::broker
