// WriteTxnMarkers (key 27), v0-1: a transaction coordinator asks this broker
// to write COMMIT/ABORT markers into partitions it leads (KIP-98). Each
// marker of the request is handed to LocalTxnMarkerWriter
// (txn_marker_local.h); the answer carries one error per partition, in the
// request's order, once every marker is committed or failed.
#include <atomic>
#include <memory>
#include <utility>

#include "broker/api/authorize.h"
#include "broker/api/handler.h"
#include "broker/api/txn_marker_local.h"
#include "broker/base/kafka_error.h"

namespace headrace::broker {
namespace {

using Response = protocol::WriteTxnMarkersResponse;

// The answer being assembled; replied when the last marker is done.
struct PendingAnswer {
  explicit PendingAnswer(Request r) : req(std::move(r)) {}
  Request req;
  Response resp;
  std::atomic<int> pending{0};
  void Release() {
    if (pending.fetch_sub(1, std::memory_order_acq_rel) == 1) req.Reply(resp);
  }
};

void HandleWriteTxnMarkers(BrokerContext& ctx, protocol::WriteTxnMarkersRequest& request,
                           Request req) {
  auto answer = std::make_shared<PendingAnswer>(std::move(req));
  answer->pending.store(static_cast<int>(request.markers.size()) + 1);
  answer->resp.markers.resize(request.markers.size());
  LocalTxnMarkerWriter writer(ctx, answer->req.executor());
  // ACLs: an inter-broker API, CLUSTER_ACTION on the CLUSTER (brokers are
  // super users until they authenticate; docs/security.md).
  if (!AuthorizedOnCluster(ctx, answer->req, AclOperation::kClusterAction)) {
    for (size_t m = 0; m < request.markers.size(); ++m) {
      auto& out = answer->resp.markers[m];
      out.producer_id = request.markers[m].producer_id;
      for (const auto& topic : request.markers[m].topics) {
        Response::WritableTxnMarkerTopicResult t;
        t.name = topic.name;
        for (int32_t p : topic.partition_indexes)
          t.partitions.push_back({p, Code(KafkaError::kClusterAuthorizationFailed)});
        out.topics.push_back(std::move(t));
      }
    }
    answer->req.Reply(answer->resp);
    return;
  }
  for (size_t m = 0; m < request.markers.size(); ++m) {
    const auto& in = request.markers[m];
    txn::TxnMarkerSpec spec;
    spec.producer_id = in.producer_id;
    spec.producer_epoch = in.producer_epoch;
    spec.coordinator_epoch = in.coordinator_epoch;
    spec.commit = in.transaction_result;
    Response::WritableTxnMarkerResult& out = answer->resp.markers[m];
    out.producer_id = in.producer_id;
    for (const auto& topic : in.topics) {
      Response::WritableTxnMarkerTopicResult t;
      t.name = topic.name;
      for (int32_t p : topic.partition_indexes) {
        spec.partitions.emplace_back(topic.name, p);
        t.partitions.push_back({p, 0});
      }
      out.topics.push_back(std::move(t));
    }
    // Each marker's results land in its own slot; `answer` is shared by
    // the writers' completions, which may run on any thread.
    writer.Write(std::move(spec), [answer, m](std::vector<KafkaError> errors) {
      size_t k = 0;
      for (auto& t : answer->resp.markers[m].topics) {
        for (auto& p : t.partitions) p.error_code = Code(errors[k++]);
      }
      answer->Release();
    });
  }
  answer->Release();
}

}  // namespace

extern const ApiHandler kWriteTxnMarkersHandler =
    MakeHandler<protocol::WriteTxnMarkersRequest, HandleWriteTxnMarkers>(0, 1);

}  // namespace headrace::broker
