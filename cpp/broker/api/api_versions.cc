// ApiVersions (key 18): which APIs and versions this broker supports, built
// from the handler registry and nothing else. The response always goes out
// with response header v0 (the codec picks it), and tagged fields holding
// their defaults are never written (the codec's rule), so librdkafka < 2.2
// parses it.
#include "broker/api/api_versions.h"

#include "broker/api/handler.h"
#include "broker/base/kafka_error.h"

namespace headrace::broker {
namespace {

protocol::ApiVersionsResponse BuildResponse(int16_t error_code) {
  protocol::ApiVersionsResponse resp;
  resp.error_code = error_code;
  for (const ApiHandler* h : AllHandlers()) {
    protocol::ApiVersionsResponse::ApiVersion v;
    v.api_key = h->api_key;
    v.min_version = h->min_version;
    v.max_version = h->max_version;
    resp.api_keys.push_back(v);
  }
  return resp;
}

void HandleApiVersions(BrokerContext&, protocol::ApiVersionsRequest&, Request req) {
  req.Reply(BuildResponse(Code(KafkaError::kNone)));
}

}  // namespace

void ReplyUnsupportedApiVersions(const Request& req) {
  // Kafka answers an ApiVersions request of an unknown version at v0 so the
  // client can read the error and the supported range, then retry.
  protocol::ApiVersionsResponse resp = BuildResponse(Code(KafkaError::kUnsupportedVersion));
  OutputBuffer out;
  protocol::EncodeResponse(out, req.header().correlation_id, 0, resp);
  // (Request::Reply would encode at the request's unsupported version.)
  req.ReplyEncoded(std::move(out));
}

extern const ApiHandler kApiVersionsHandler =
    MakeHandler<protocol::ApiVersionsRequest, HandleApiVersions>(0, 4);

}  // namespace headrace::broker
