#include "broker/api/dispatcher.h"

#include <string>

#include "broker/api/api_versions.h"
#include "broker/api/handler.h"

namespace headrace::broker {

namespace {

std::string Describe(const protocol::RequestHeader& h) {
  const protocol::ApiInfo* info = protocol::FindApi(h.request_api_key);
  return std::string(info ? info->name : "api key " + std::to_string(h.request_api_key)) +
         " v" + std::to_string(h.request_api_version);
}

// `respond`, recording the request's latency by API (from now until it is
// answered) and counting it in flight meanwhile.
net::Responder Timed(BrokerMetrics* m, int16_t api_key, net::Responder respond) {
  m->requests_in_flight.Add(1);
  return [m, api_key, start = BrokerMetrics::Clock::now(),
          respond = std::move(respond)](net::Reply reply) {
    m->RecordRequest(api_key, BrokerMetrics::Clock::now() - start);
    m->requests_in_flight.Add(-1);
    respond(std::move(reply));
  };
}

}  // namespace

void Dispatcher::Handle(const net::ConnectionInfo& conn, std::span<uint8_t> frame,
                        net::Responder respond) {
  protocol::Reader reader(frame);
  protocol::RequestHeader header;
  Status st = protocol::DecodeRequestHeader(reader, &header);
  if (st.code() == StatusCode::kCorruption) {
    respond(net::Reply::Close("malformed request header: " + st.message()));
    return;
  }
  const ApiHandler* handler = FindHandler(header.request_api_key);
  const bool supported = st.ok() && handler != nullptr &&
                         header.request_api_version >= handler->min_version &&
                         header.request_api_version <= handler->max_version;
  if (supported && metrics_ != nullptr) {
    respond = Timed(metrics_, header.request_api_key, std::move(respond));
  }
  Request req(std::move(header), conn, std::move(respond));
  if (ClusterState* cluster = ctx_->state->cluster(); cluster != nullptr && !cluster->applied()) {
    // Cluster mode, before the control plane's first state: not serving
    // yet, as a Kafka broker does not until its startup is complete.
    req.Close("not serving yet: waiting for the cluster's state");
    return;
  }
  if (!supported) {
    if (req.api_key() == protocol::ApiVersionsRequest::kApiKey) {
      ReplyUnsupportedApiVersions(req);
    } else {
      // Like Kafka: a request we cannot parse the version of cannot be
      // answered in a form the client would understand.
      req.Close("unsupported request " + Describe(req.header()));
    }
    return;
  }
  handler->handle(*ctx_, reader, std::move(req));
}

}  // namespace headrace::broker
