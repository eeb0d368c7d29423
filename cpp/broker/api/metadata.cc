// Metadata (key 3): this broker, the cluster id, and the requested topics
// with their partitions. Single node: this broker is the controller and the
// leader, sole replica and sole in-sync replica of every partition.
//
// Topic selection (the schema's rules):
//   v0       an empty array means all topics;
//   v1+      a null array means all topics, an empty one none;
//   v12      a topic may be named by id with a null name (UNKNOWN_TOPIC_ID
//            when no topic has that id).
// Named topics that do not exist are auto-created when the request allows
// it (v4+, always before) and auto.create.topics.enable is on: the creation
// is posted to the admin worker and the topic answered LEADER_NOT_AVAILABLE
// (retriable) until it exists (TopicRegistry::FindOrAutoCreate); otherwise
// they get UNKNOWN_TOPIC_OR_PARTITION, or INVALID_TOPIC_EXCEPTION for an
// invalid name.
//
// Internal topics (is_internal = true): in cluster mode __consumer_offsets
// and __transaction_state are real replicated topics (one partition each,
// created by the first FindCoordinator that needs them) and are listed from
// the ClusterView. On a single node the coordinators keep their logs in
// data_dir/__group_metadata and data_dir/__transaction_state; they are
// served as one-partition topics led by this node while the coordinator is
// up (TopicRegistry::SetInternalTopic: Fetch and ListOffsets read them as
// from Kafka). Neither is ever auto-created as an ordinary topic.
#include <memory>
#include <string>
#include <vector>

#include "broker/api/cluster_lookup.h"
#include "broker/api/authorize.h"
#include "broker/api/handler.h"
#include "broker/api/partition_checks.h"
#include "broker/base/kafka_error.h"
#include "broker/partition/topic_name.h"

namespace headrace::broker {
namespace {

using Response = protocol::MetadataResponse;

// Kafka's "not requested" value of the authorized-operation bit sets.
constexpr int32_t kOperationsNotRequested = INT32_MIN;

// ACLs (authorize.h): a topic is listed only to a client that may DESCRIBE
// it; the bit sets hold what the client may do (AclOperation codes as bit
// positions), computed only when asked for.
struct Access {
  const BrokerContext& ctx;
  const Request& req;
  bool include_operations;

  bool CanDescribe(std::string_view topic) const {
    return AuthorizedOnTopic(ctx, req, AclOperation::kDescribe, topic);
  }
  int32_t TopicOperations(std::string_view topic) const {
    if (!include_operations) return kOperationsNotRequested;
    return AuthorizedOperations(ctx, req, ResourceType::kTopic, topic,
                                {AclOperation::kRead, AclOperation::kWrite, AclOperation::kCreate,
                                 AclOperation::kDelete, AclOperation::kAlter, AclOperation::kDescribe,
                                 AclOperation::kDescribeConfigs, AclOperation::kAlterConfigs});
  }
};

// A found topic's answer without its partitions.
Response::MetadataResponseTopic TopicHeader(const std::string& name, const Uuid& id,
                                            const Access& access) {
  Response::MetadataResponseTopic out;
  out.error_code = Code(KafkaError::kNone);
  out.name = name;
  out.topic_id = id;
  out.is_internal = IsInternalTopic(name);
  out.topic_authorized_operations = access.TopicOperations(name);
  return out;
}

Response::MetadataResponseTopic DescribeTopic(const BrokerContext& ctx, const Topic& topic,
                                              const Access& access) {
  Response::MetadataResponseTopic out = TopicHeader(topic.name, topic.id, access);
  out.partitions.reserve(topic.partitions.size());
  for (const auto& partition : topic.partitions) {
    Response::MetadataResponsePartition p;
    p.error_code = Code(KafkaError::kNone);
    p.partition_index = partition->partition();
    p.leader_id = ctx.node_id;
    p.leader_epoch = partition->leader_epoch().value();
    p.replica_nodes = {ctx.node_id};
    p.isr_nodes = {ctx.node_id};
    // Its log directory failed: still led here (requests to it get
    // KAFKA_STORAGE_ERROR), and listed offline as Kafka lists such replicas.
    if (partition->offline()) p.offline_replicas = {ctx.node_id};
    out.partitions.push_back(std::move(p));
  }
  return out;
}

Response::MetadataResponseTopic TopicError(KafkaError error, std::optional<std::string> name,
                                           const protocol::Uuid& id) {
  Response::MetadataResponseTopic out;
  out.error_code = Code(error);
  out.name = std::move(name);
  out.topic_id = id;
  out.is_internal = out.name && IsInternalTopic(*out.name);
  return out;
}

// A topic named in the request.
Response::MetadataResponseTopic LookUpByName(BrokerContext& ctx, const std::string& name,
                                             bool auto_create, const Access& access) {
  if (!access.CanDescribe(name)) return TopicError(KafkaError::kTopicAuthorizationFailed, name, {});
  if (IsInternalTopic(name)) {  // never auto-created
    std::shared_ptr<const Topic> internal = ctx.topics().FindTopic(name);
    if (!internal) return TopicError(KafkaError::kUnknownTopicOrPartition, name, {});
    return DescribeTopic(ctx, *internal, access);
  }
  std::shared_ptr<const Topic> topic;
  if (auto_create && !ctx.topics().FindTopic(name) && !MayAutoCreate(ctx, access.req, name)) {
    return TopicError(KafkaError::kTopicAuthorizationFailed, name, {});
  }
  if (auto_create) {
    auto found = ctx.topics().FindOrAutoCreate(name);
    if (!found.ok()) return TopicError(ToKafkaError(found.status()), name, {});
    topic = *found;
  } else {
    topic = ctx.topics().FindTopic(name);
    if (!topic) {
      KafkaError e = ValidateTopicName(name).ok() ? KafkaError::kUnknownTopicOrPartition
                                                  : KafkaError::kInvalidTopicException;
      return TopicError(e, name, {});
    }
  }
  return DescribeTopic(ctx, *topic, access);
}

// A topic given by id only (v10+ with a null name).
Response::MetadataResponseTopic LookUpById(BrokerContext& ctx, const protocol::Uuid& id,
                                           const Access& access) {
  auto topic = id.is_zero() ? nullptr : ctx.topics().FindTopicById(id);
  if (!topic) return TopicError(KafkaError::kUnknownTopicId, std::nullopt, id);
  if (!access.CanDescribe(topic->name))
    return TopicError(KafkaError::kTopicAuthorizationFailed, std::nullopt, id);
  return DescribeTopic(ctx, *topic, access);
}

// Cluster mode: a topic as the ClusterView has it. A partition without a
// live leader answers LEADER_NOT_AVAILABLE with leader -1; replicas on
// brokers that are not live are listed as offline.
Response::MetadataResponseTopic DescribeFromView(const ClusterView& view, const TopicView& topic,
                                                 const Access& ops) {
  Response::MetadataResponseTopic out = TopicHeader(topic.name, topic.id, ops);
  for (const PartitionAssignment& a : topic.partitions) {
    Response::MetadataResponsePartition p;
    p.partition_index = a.partition;
    // A leader that is not a live broker (not registered yet, or gone) is
    // no leader: -1, as Kafka answers (clients then look again instead of
    // caching a leader they have no address for).
    const bool leader_live = a.leader >= 0 && view.FindBroker(a.leader);
    p.leader_id = leader_live ? a.leader : -1;
    p.leader_epoch = a.leader_epoch;
    p.replica_nodes = a.replicas;
    p.isr_nodes = a.isr;
    for (int32_t r : a.replicas) {
      if (!view.FindBroker(r)) p.offline_replicas.push_back(r);
    }
    p.error_code = Code(leader_live ? KafkaError::kNone : KafkaError::kLeaderNotAvailable);
    out.partitions.push_back(std::move(p));
  }
  return out;
}

void HandleClusterMetadata(BrokerContext& ctx, const ClusterView& view,
                           protocol::MetadataRequest& request, Response* resp, int16_t version,
                           const std::string& listener, const Access& ops) {
  for (const BrokerEndpoint& b : view.brokers) {
    Response::MetadataResponseBroker out;
    out.node_id = b.id;
    // The client's listener selects each broker's endpoint; a broker
    // without that listener is not listed (as Kafka).
    if (!b.AddressFor(listener, &out.host, &out.port)) continue;
    out.rack = b.rack;
    resp->brokers.push_back(std::move(out));
  }
  resp->controller_id = view.controller_id;
  const bool all = !request.topics || (version == 0 && request.topics->empty());
  if (all) {
    for (const auto& [name, topic] : view.topics) {
      if (ops.CanDescribe(name)) resp->topics.push_back(DescribeFromView(view, topic, ops));
    }
    return;
  }
  const bool auto_create =
      request.allow_auto_topic_creation && ctx.config().auto_create_topics_enable;
  for (const auto& t : *request.topics) {
    if (!t.name) {
      const TopicView* topic = t.topic_id.is_zero() ? nullptr : view.FindTopicById(t.topic_id);
      if (topic != nullptr && !ops.CanDescribe(topic->name)) {
        resp->topics.push_back(
            TopicError(KafkaError::kTopicAuthorizationFailed, std::nullopt, t.topic_id));
        continue;
      }
      resp->topics.push_back(topic ? DescribeFromView(view, *topic, ops)
                                   : TopicError(KafkaError::kUnknownTopicId, std::nullopt, t.topic_id));
    } else if (!ops.CanDescribe(*t.name)) {
      resp->topics.push_back(TopicError(KafkaError::kTopicAuthorizationFailed, *t.name, {}));
    } else if (const TopicView* topic = view.FindTopic(*t.name)) {
      resp->topics.push_back(DescribeFromView(view, *topic, ops));
    } else if (!ValidateTopicName(*t.name).ok()) {
      resp->topics.push_back(TopicError(KafkaError::kInvalidTopicException, *t.name, {}));
    } else if (auto_create && !MayAutoCreate(ctx, ops.req, *t.name)) {
      resp->topics.push_back(TopicError(KafkaError::kTopicAuthorizationFailed, *t.name, {}));
    } else if (auto_create) {
      Status st = RequestAutoCreate(ctx, *t.name);
      resp->topics.push_back(TopicError(ToKafkaError(st), *t.name, {}));
    } else {
      resp->topics.push_back(TopicError(KafkaError::kUnknownTopicOrPartition, *t.name, {}));
    }
  }
}

void HandleMetadata(BrokerContext& ctx, protocol::MetadataRequest& request, Request req) {
  Response resp;
  resp.cluster_id = ctx.cluster_id();
  resp.cluster_authorized_operations =
      request.include_cluster_authorized_operations ? ClusterAuthorizedOperations(ctx, req)
                                                    : kOperationsNotRequested;
  const Access ops{ctx, req, request.include_topic_authorized_operations};
  if (ClusterState* cluster = ctx.state->cluster()) {
    HandleClusterMetadata(ctx, *cluster->view(), request, &resp, req.version(),
                          req.session().listener_name, ops);
    req.Reply(resp);
    return;
  }
  Response::MetadataResponseBroker self;
  self.node_id = ctx.node_id;
  ctx.AdvertisedFor(req.session().listener_name, &self.host, &self.port);
  resp.brokers.push_back(std::move(self));
  resp.controller_id = ctx.node_id;
  const bool all = !request.topics || (req.version() == 0 && request.topics->empty());
  if (all) {
    for (const auto& topic : ctx.topics().InternalTopics()) {
      if (ops.CanDescribe(topic->name)) resp.topics.push_back(DescribeTopic(ctx, *topic, ops));
    }
    for (const auto& topic : ctx.topics().ListTopics()) {
      if (IsInternalTopic(topic->name)) continue;  // an ordinary one from an older version
      if (ops.CanDescribe(topic->name)) resp.topics.push_back(DescribeTopic(ctx, *topic, ops));
    }
  } else {
    const bool auto_create =
        request.allow_auto_topic_creation && ctx.config().auto_create_topics_enable;
    for (const auto& t : *request.topics) {
      if (t.name) {
        resp.topics.push_back(LookUpByName(ctx, *t.name, auto_create, ops));
      } else {
        resp.topics.push_back(LookUpById(ctx, t.topic_id, ops));
      }
    }
  }
  req.Reply(resp);
}

}  // namespace

extern const ApiHandler kMetadataHandler =
    MakeHandler<protocol::MetadataRequest, HandleMetadata>(0, 12);

}  // namespace headrace::broker
