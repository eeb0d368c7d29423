// DescribeCluster (key 60), v0..1 (KIP-700): the cluster id, the controller
// (this node: a single-node cluster is its own controller) and the brokers
// (this one, at its advertised address, no rack). v1 (KIP-919) adds the
// endpoint type: 1 = brokers is answered; 2 = controllers is
// MISMATCHED_ENDPOINT_TYPE (this is a broker endpoint); anything else
// UNSUPPORTED_ENDPOINT_TYPE.
#include <climits>
#include <string>

#include "broker/api/authorize.h"
#include "broker/api/handler.h"
#include "broker/base/kafka_error.h"

namespace headrace::broker {
namespace {

using Req = protocol::DescribeClusterRequest;
using Resp = protocol::DescribeClusterResponse;

constexpr int8_t kEndpointBrokers = 1;
constexpr int8_t kEndpointControllers = 2;

void HandleDescribeCluster(BrokerContext& ctx, Req& req, Request request) {
  Resp resp;
  resp.endpoint_type = req.endpoint_type;
  resp.cluster_id = ctx.cluster_id();
  if (req.endpoint_type == kEndpointControllers) {
    resp.error_code = Code(KafkaError::kMismatchedEndpointType);
    resp.error_message =
        "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type "
        "CONTROLLER";
  } else if (req.endpoint_type != kEndpointBrokers) {
    resp.error_code = Code(KafkaError::kUnsupportedEndpointType);
    resp.error_message = "Unsupported endpoint type " + std::to_string(req.endpoint_type);
  } else {
    resp.error_code = Code(KafkaError::kNone);
    if (ClusterState* cluster = ctx.state->cluster()) {
      auto view = cluster->view();
      resp.controller_id = view->controller_id;
      for (const BrokerEndpoint& b : view->brokers) {
        Resp::DescribeClusterBroker out;
        out.broker_id = b.id;
        if (!b.AddressFor(request.session().listener_name, &out.host, &out.port)) continue;
        out.rack = b.rack;
        resp.brokers.push_back(std::move(out));
      }
    } else {
      resp.controller_id = ctx.node_id;
      Resp::DescribeClusterBroker self;
      self.broker_id = ctx.node_id;
      ctx.AdvertisedFor(request.session().listener_name, &self.host, &self.port);
      resp.brokers.push_back(std::move(self));
    }
    resp.cluster_authorized_operations =
        req.include_cluster_authorized_operations ? ClusterAuthorizedOperations(ctx, request)
                                                  : INT32_MIN;
  }
  request.Reply(resp);
}

}  // namespace

extern const ApiHandler kDescribeClusterHandler =
    MakeHandler<protocol::DescribeClusterRequest, HandleDescribeCluster>(0, 1);

}  // namespace headrace::broker
