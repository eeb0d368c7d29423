// DeleteRecords (key 21), v0..2: moves partitions' log start offset
// forward, making the records before it unreadable (whole segments below
// it are removed). Per partition:
//   offset -1                     the high watermark (delete everything)
//   offset < -1 or > HW           OFFSET_OUT_OF_RANGE
//   offset <= current log start   nothing changes
//   unknown topic or partition    UNKNOWN_TOPIC_OR_PARTITION
// low_watermark is the log start offset afterwards (-1 on error). The move
// is done before the answer, so timeout_ms is not needed.
#include <memory>
#include <string>

#include "broker/api/authorize.h"
#include "broker/api/handler.h"
#include "broker/kafka_error.h"
#include "broker/topic_name.h"

namespace headrace::broker {
namespace {

using Req = protocol::DeleteRecordsRequest;
using Resp = protocol::DeleteRecordsResponse;

Resp::DeleteRecordsPartitionResult DeleteBefore(BrokerContext& ctx, const Request& req,
                                                const std::string& topic,
                                                const Req::DeleteRecordsPartition& p) {
  Resp::DeleteRecordsPartitionResult r;
  r.partition_index = p.partition_index;
  r.low_watermark = -1;
  if (!AuthorizedOnTopic(ctx, req, AclOperation::kDelete, topic)) {  // ACLs
    r.error_code = Code(KafkaError::kTopicAuthorizationFailed);
    return r;
  }
  if (Status internal = CheckClientOpOnInternalTopic(topic, InternalTopicOp::kDeleteRecords);
      !internal.ok()) {
    r.error_code = Code(ToKafkaError(internal));
    return r;
  }
  Result<std::shared_ptr<Partition>> partition = ctx.topics().GetPartition(topic, p.partition_index);
  if (!partition.ok()) {
    r.error_code = Code(ToKafkaError(partition.status()));
    return r;
  }
  Result<Offset> start = (*partition)->DeleteRecordsBefore(Offset(p.offset));
  if (!start.ok()) {
    r.error_code = Code(ToKafkaError(start.status()));
    return r;
  }
  r.error_code = Code(KafkaError::kNone);
  r.low_watermark = start->value();
  return r;
}

void HandleDeleteRecords(BrokerContext& ctx, Req& req, Request request) {
  Resp resp;
  for (const auto& t : req.topics) {
    Resp::DeleteRecordsTopicResult out;
    out.name = t.name;
    for (const auto& p : t.partitions) out.partitions.push_back(DeleteBefore(ctx, request, t.name, p));
    resp.topics.push_back(std::move(out));
  }
  request.Reply(resp);
}

}  // namespace

extern const ApiHandler kDeleteRecordsHandler =
    MakeHandler<protocol::DeleteRecordsRequest, HandleDeleteRecords>(0, 2);

}  // namespace headrace::broker
