// DescribeProducers (key 61), v0 (KIP-664): per requested partition, the
// producers with state in it (Partition::DescribeProducers: id, epoch, last
// sequence, last timestamp, coordinator epoch, open transaction's first
// offset). UNKNOWN_TOPIC_OR_PARTITION for a partition this broker does not
// hold, NOT_LEADER_OR_FOLLOWER when it is not the leader.
#include "broker/api/authorize.h"
#include "broker/api/handler.h"
#include "broker/base/kafka_error.h"

namespace headrace::broker {
namespace {

using Response = protocol::DescribeProducersResponse;

void DescribeOne(BrokerContext& ctx, const std::string& topic, int32_t index,
                 Response::PartitionResponse* out) {
  out->partition_index = index;
  std::shared_ptr<Partition> partition = ctx.topics().FindPartition(topic, index);
  KafkaError error = KafkaError::kNone;
  if (partition == nullptr) error = KafkaError::kUnknownTopicOrPartition;
  else if (!partition->is_leader()) error = KafkaError::kNotLeaderOrFollower;
  out->error_code = Code(error);
  if (error != KafkaError::kNone) return;
  for (const ProducerDescription& d : partition->DescribeProducers()) {
    Response::ProducerState s;
    s.producer_id = d.producer_id;
    s.producer_epoch = d.producer_epoch;
    s.last_sequence = d.last_sequence;
    s.last_timestamp = d.last_timestamp;
    s.coordinator_epoch = d.coordinator_epoch;
    s.current_txn_start_offset = d.current_txn_start_offset;
    out->active_producers.push_back(s);
  }
}

void HandleDescribeProducers(BrokerContext& ctx, protocol::DescribeProducersRequest& request,
                             Request req) {
  Response resp;
  for (const auto& topic : request.topics) {
    Response::TopicResponse& t = resp.topics.emplace_back();
    t.name = topic.name;
    const bool readable = AuthorizedOnTopic(ctx, req, AclOperation::kRead, topic.name);  // ACLs
    for (int32_t index : topic.partition_indexes) {
      if (!readable) {
        auto& out = t.partitions.emplace_back();
        out.partition_index = index;
        out.error_code = Code(KafkaError::kTopicAuthorizationFailed);
        continue;
      }
      DescribeOne(ctx, topic.name, index, &t.partitions.emplace_back());
    }
  }
  req.Reply(resp);
}

}  // namespace

extern const ApiHandler kDescribeProducersHandler =
    MakeHandler<protocol::DescribeProducersRequest, HandleDescribeProducers>(0, 0);

}  // namespace headrace::broker
