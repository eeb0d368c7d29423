#include "broker/server/dispatcher.h"

#include <chrono>
#include <string>

#include "broker/api/api_versions.h"
#include "broker/api/handler.h"
#include "broker/api/sasl_session.h"
#include "broker/security/quota/quota_manager.h"

namespace headrace::broker {

namespace {

// Requests outside request_percentage (Kafka exempts the handshake and
// inter-broker requests): ApiVersions, SaslHandshake, SaslAuthenticate,
// WriteTxnMarkers and the share-state RPCs (83-87).
bool ExemptFromRequestQuota(int16_t api_key) {
  return api_key == 18 || api_key == 17 || api_key == 36 || api_key == 27 ||
         (api_key >= 83 && api_key <= 87);
}

std::string Describe(const protocol::RequestHeader& h) {
  const protocol::ApiInfo* info = protocol::FindApi(h.request_api_key);
  return std::string(info ? info->name : "api key " + std::to_string(h.request_api_key)) +
         " v" + std::to_string(h.request_api_version);
}

}  // namespace

void Dispatcher::Handle(const net::ConnectionInfo& conn, std::span<uint8_t> frame,
                        net::Responder respond) {
  // After a v0 SaslHandshake the next frames are raw SASL tokens.
  if (HandleRawSaslToken(*ctx_, conn, frame, respond)) return;
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
  Request req(std::move(header), conn, std::move(respond));
  if (ClusterState* cluster = ctx_->state->cluster(); cluster != nullptr && !cluster->applied()) {
    // Cluster mode, before the control plane's first state: not serving
    // yet, as a Kafka broker does not until its startup is complete.
    req.Close("not serving yet: waiting for the cluster's state");
    return;
  }
  // The one SASL gate (sasl_session.h): unauthenticated or expired
  // sessions get nothing but the SASL exchange.
  if (conn.session && IsSaslProtocol(conn.session->protocol)) {
    std::string why = SaslGate(*ctx_, *conn.session, req.api_key(), frame.size(),
                               std::chrono::steady_clock::now());
    if (!why.empty()) {
      req.Close(std::move(why));
      return;
    }
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
  req.TimeInto(metrics_);  // latency by API, recorded when answered (docs/metrics.md)
  req.set_frame_bytes(static_cast<int32_t>(frame.size()));
  const int16_t api_key = req.api_key();
  quota::QuotaManager* quotas = ctx_->quotas;
  const bool quota_time = quotas != nullptr && quotas->Enabled(quota::QuotaKind::kRequest) &&
                          !ExemptFromRequestQuota(api_key);
  if (!quota_time && metrics_ == nullptr) {
    handler->handle(*ctx_, reader, std::move(req));
    return;
  }
  // The handler's time on this thread: the handler-time metric, and for
  // request_percentage quotas the time charged (the throttle is the one
  // earned by the time recorded so far; this request's is recorded after).
  std::string user, client;
  if (quota_time) {
    user = quota::UserOfPrincipal(req.session().principal);
    client = req.client_id();
    req.AddThrottle(quotas->RequestThrottle(user, client));
  }
  const auto start = std::chrono::steady_clock::now();
  handler->handle(*ctx_, reader, std::move(req));
  const auto took = std::chrono::steady_clock::now() - start;
  if (metrics_ != nullptr) metrics_->RecordHandler(api_key, took);
  if (quota_time) {
    quotas->RecordRequestNanos(
        user, client, std::chrono::duration_cast<std::chrono::nanoseconds>(took).count());
  }
}

}  // namespace headrace::broker
