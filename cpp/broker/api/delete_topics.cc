// DeleteTopics (key 20), v1..6. v1-5 name topics in topic_names; v6 sends
// `topics`, each naming a topic by name or by id (exactly one of them).
// Per topic:
//   unknown name                      UNKNOWN_TOPIC_OR_PARTITION
//   unknown id                        UNKNOWN_TOPIC_ID (name null)
//   both or neither of name and id    INVALID_REQUEST
//   an internal topic                 INVALID_TOPIC_EXCEPTION
//   a name or id given twice          INVALID_REQUEST (one result)
// A deleted topic's result carries its id (v6). Deletion is synchronous
// (the data directories are removed in the background afterwards).
#include <set>
#include <string>
#include <vector>

#include "broker/api/admin_util.h"
#include "broker/api/cluster_admin.h"
#include "broker/api/authorize.h"
#include "broker/api/handler.h"
#include "broker/api/partition_checks.h"
#include "broker/base/kafka_error.h"
#include "broker/partition/topic_name.h"

namespace headrace::broker {
namespace {

using Req = protocol::DeleteTopicsRequest;
using Resp = protocol::DeleteTopicsResponse;

Resp::DeletableTopicResult Failed(std::optional<std::string> name, const protocol::Uuid& id,
                                  const Status& st) {
  Resp::DeletableTopicResult r;
  r.name = std::move(name);
  r.topic_id = id;
  r.error_code = Code(ToKafkaError(st));
  r.error_message = st.message();
  return r;
}

// ACLs: DELETE on the topic (by id: on the topic the id names).
Resp::DeletableTopicResult DeleteByName(BrokerContext& ctx, const Request& req,
                                        const std::string& name) {
  if (Status st = RequireOnTopic(ctx, req, AclOperation::kDelete, name); !st.ok()) {
    return Failed(name, protocol::Uuid{}, st);
  }
  if (Status st = CheckClientOpOnInternalTopic(name, InternalTopicOp::kDelete); !st.ok()) {
    return Failed(name, protocol::Uuid{}, st);
  }
  std::shared_ptr<const Topic> topic = ctx.topics().FindTopic(name);
  protocol::Uuid id = topic ? topic->id : protocol::Uuid{};
  Status st = ctx.topics().DeleteTopic(name);
  if (!st.ok()) return Failed(name, protocol::Uuid{}, st);
  Resp::DeletableTopicResult r;
  r.name = name;
  r.topic_id = id;
  r.error_code = Code(KafkaError::kNone);
  return r;
}

Resp::DeletableTopicResult DeleteById(BrokerContext& ctx, const Request& req,
                                      const protocol::Uuid& id) {
  if (auto topic = ctx.topics().FindTopicById(id)) {
    if (Status st = RequireOnTopic(ctx, req, AclOperation::kDelete, topic->name); !st.ok())
      return Failed(std::nullopt, id, st);
  }
  Result<std::string> deleted = ctx.topics().DeleteTopicById(id);
  if (!deleted.ok()) return Failed(std::nullopt, id, deleted.status());
  Resp::DeletableTopicResult r;
  r.name = *deleted;
  r.topic_id = id;
  r.error_code = Code(KafkaError::kNone);
  return r;
}

Status Invalid(const char* why) { return KafkaStatus(KafkaError::kInvalidRequest, why); }

// v6: topics by name or id.
void DeleteStates(BrokerContext& ctx, const Request& req,
                  const std::vector<Req::DeleteTopicState>& topics, Resp* resp) {
  std::set<std::string> names, dup_names, reported_names;
  std::set<protocol::Uuid> ids, dup_ids, reported_ids;
  for (const auto& t : topics) {  // only well-formed entries count as repeats
    if (t.name && t.topic_id.is_zero() && !names.insert(*t.name).second) dup_names.insert(*t.name);
    if (!t.name && !t.topic_id.is_zero() && !ids.insert(t.topic_id).second) {
      dup_ids.insert(t.topic_id);
    }
  }
  for (const auto& t : topics) {
    const bool has_id = !t.topic_id.is_zero();
    if (t.name && has_id) {
      resp->responses.push_back(
          Failed(t.name, t.topic_id, Invalid("You may not specify both topic name and topic id.")));
    } else if (!t.name && !has_id) {
      resp->responses.push_back(
          Failed(std::nullopt, t.topic_id, Invalid("Neither topic name nor id were specified.")));
    } else if (t.name && dup_names.count(*t.name)) {
      if (reported_names.insert(*t.name).second) {
        resp->responses.push_back(Failed(t.name, t.topic_id, Invalid("Duplicate topic name.")));
      }
    } else if (has_id && dup_ids.count(t.topic_id)) {
      if (reported_ids.insert(t.topic_id).second) {
        resp->responses.push_back(Failed(std::nullopt, t.topic_id, Invalid("Duplicate topic id.")));
      }
    } else {
      resp->responses.push_back(t.name ? DeleteByName(ctx, req, *t.name)
                                        : DeleteById(ctx, req, t.topic_id));
    }
  }
}

void HandleDeleteTopics(BrokerContext& ctx, Req& req, Request request) {
  if (ctx.state->cluster()) return ClusterDeleteTopics(ctx, req, std::move(request));
  Resp resp;
  if (request.version() >= 6) {
    DeleteStates(ctx, request, req.topics, &resp);
  } else {
    std::set<std::string> dups = DuplicateNames(req.topic_names), reported;
    for (const auto& name : req.topic_names) {
      if (dups.count(name)) {
        if (reported.insert(name).second) {
          resp.responses.push_back(Failed(name, protocol::Uuid{}, Invalid("Duplicate topic name.")));
        }
        continue;
      }
      resp.responses.push_back(DeleteByName(ctx, request, name));
    }
  }
  request.Reply(resp);
}

}  // namespace

extern const ApiHandler kDeleteTopicsHandler =
    MakeHandler<Req, OnAdminWorker<Req, HandleDeleteTopics>>(1, 6);

}  // namespace headrace::broker
