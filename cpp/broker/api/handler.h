// The Kafka API handler framework. One Kafka API = one file in this
// directory that defines one `const ApiHandler kXxxHandler` (its API key and
// the version range it supports next to its code). handler_registry.cc lists
// them all; that list is the only source of the ApiVersions response.
//
// A handler receives its decoded request and a Request (header + responder).
// It answers exactly once through req.Reply(...) / req.NoResponse() /
// req.Close(...), either before returning or later from any thread (the
// Request is cheap to copy and may be kept, e.g. by a parked fetch).
#pragma once

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "broker/topics/broker_state.h"
#include "net/request_handler.h"
#include "protocol/codec.h"

namespace headrace::broker {
namespace group {
class GroupCoordinator;   // broker/coordinator/group/group_coordinator.h
class GroupCoordinators;  // broker/coordinator/group/group_coordinators.h
struct GroupConfig;      // broker/coordinator/group/group_config.h
class GroupConfigStore;  // broker/coordinator/group/group_config_store.h
}  // namespace group
namespace replication {
struct ReplicationQuotas;  // broker/replication/replication_quota.h
struct InterBrokerSecurity;  // broker/replication/inter_broker_security.h
}
namespace fetch {
class FetchSessionCache;  // broker/fetch/fetch_session.h
}  // namespace fetch
namespace share {
class ShareRegistry;      // broker/share/share_registry.h
class ShareSessionCache;  // broker/share/share_session.h
class ShareCoordinators;  // broker/coordinator/share/share_coordinators.h
}  // namespace share
namespace auth {
class Authorizer;    // broker/security/auth/authorizer.h
class FileAclStore;  // broker/security/auth/acl_store.h
}  // namespace auth
namespace txn {
class TxnCoordinators;  // broker/coordinator/txn/txn_coordinators.h
struct TxnConfig;      // broker/coordinator/txn/txn_config.h
}  // namespace txn
namespace sasl {
class SaslServer;  // broker/security/sasl/sasl_server.h
}  // namespace sasl
namespace quota {
class ClientQuotaStore;  // broker/security/quota/client_quota_store.h
class QuotaManager;      // broker/security/quota/quota_manager.h
}  // namespace quota

class ShareStateClient;  // broker/api/share_state_client.h

// The internal topic whose partitions are the group coordinators' logs in
// cluster mode (a group's partition: coordinator/base/group_partition.h).
inline constexpr const char* kConsumerOffsetsTopic = "__consumer_offsets";
// The internal topic whose partitions are the transaction coordinators' logs
// in cluster mode (an id's partition: coordinator/txn/txn_coordinators.h).
inline constexpr const char* kTransactionStateTopic = "__transaction_state";
// The share coordinators' internal topic (KIP-932; coordinator/share/).
inline constexpr const char* kShareGroupStateTopic = "__share_group_state";

// One listener's advertised address (advertised.listeners, docs/security.md).
struct ListenerEndpoint {
  std::string listener_name;
  std::string host;
  int32_t port = 0;
};

// What handlers see of the broker. Lives as long as the broker serves.
struct BrokerContext {
  BrokerState* state = nullptr;
  // The address Metadata/FindCoordinator/DescribeCluster hand out (the
  // actual bound port when the listener asked for port 0).
  std::string advertised_host;
  std::atomic<int32_t> advertised_port{0};
  int32_t node_id = 0;
  // How this broker connects to the others (cluster mode; null = PLAINTEXT):
  // the transaction marker sender's connections. Set before serving.
  std::shared_ptr<const replication::InterBrokerSecurity> inter_broker_security;
  // The group coordinators of this broker (coordinator/group/group_coordinators.h):
  // For(group_id) is the coordinator of the group's partition of
  // __consumer_offsets here, or the error to answer (NOT_COORDINATOR in
  // cluster mode when another broker leads it). Set before serving, owned by
  // the broker; null only in tests that build a bare context. Handlers call
  // GroupCoordinatorFor (api/group_lookup.h), take one snapshot and use it
  // throughout.
  group::GroupCoordinators* group_coordinators = nullptr;
  const group::GroupConfig* group_config = nullptr;  // the broker's group.* / offsets.* keys
  // Group configs (GROUP config resource, group_resource_config.h); null:
  // none kept (tests that build a bare context; GROUP resources refused).
  group::GroupConfigStore* group_configs = nullptr;
  // The transaction coordinators of this broker (coordinator/txn/txn_coordinators.h),
  // routed like the group coordinators by transactional id over the
  // partitions of __transaction_state. Set before serving, owned by the
  // broker; null only in tests that build a bare context. Handlers call
  // TxnCoordinatorFor (api/txn_api.h).
  txn::TxnCoordinators* txn_coordinators = nullptr;
  const txn::TxnConfig* txn_config = nullptr;  // the broker's transaction.* keys
  fetch::FetchSessionCache* fetch_sessions = nullptr;  // KIP-227 sessions; null: none kept
  // KIP-932: the share-partitions this broker leads and the share sessions
  // of ShareFetch/ShareAcknowledge (api/share_partition_ops.h). Set before
  // serving; null only in tests that build a bare context (the handlers
  // then answer SHARE_SESSION_NOT_FOUND).
  share::ShareRegistry* share_partitions = nullptr;
  share::ShareSessionCache* share_sessions = nullptr;
  // The share coordinators of this broker (coordinator/share/
  // share_coordinators.h): where share-partitions' state is persisted
  // (api/share_state.h). Null, or no partitions (cluster mode until
  // __share_group_state exists): share state is kept in memory only.
  share::ShareCoordinators* share_coordinators = nullptr;
  // Calls to share coordinators on other brokers (cluster mode;
  // api/share_state_client.h); null on a single node.
  ShareStateClient* share_state_client = nullptr;
  // Replication throttles (leader side used by Fetch); null: none.
  replication::ReplicationQuotas* replication_quotas = nullptr;
  // Client quotas (docs/security.md "Quotas"); null: none (handler tests).
  quota::ClientQuotaStore* client_quotas = nullptr;
  quota::QuotaManager* quotas = nullptr;
  // SASL listeners' settings and the SCRAM credential store
  // (docs/security.md); null only in tests that build a bare context.
  const sasl::SaslServer* sasl = nullptr;
  mutable std::mutex endpoints_mu;
  std::vector<ListenerEndpoint> listener_endpoints;  // guarded by endpoints_mu
  // ACL checks (broker/api/authorize.h); null = no authorisation (tests
  // calling handlers directly). The store: single node with an authorizer
  // (cluster mode keeps ACLs in ZooKeeper; null otherwise).
  auth::Authorizer* authorizer = nullptr;
  auth::FileAclStore* acl_store = nullptr;

  TopicRegistry& topics() const { return state->topics(); }
  const BrokerConfig& config() const { return state->config(); }
  // Cluster mode: the cluster's id (from ZooKeeper, once the control plane
  // applied a view); otherwise this node's stored one.
  std::string cluster_id() const {
    if (ClusterState* cluster = state->cluster()) {
      auto view = cluster->view();
      if (!view->cluster_id.empty()) return view->cluster_id;
    }
    return state->identity().cluster_id;
  }
  // The broker clients are sent to for `node` (cluster mode: from the view;
  // false when it is not live); a single node knows only itself.
  bool FindEndpoint(int32_t node, std::string* host, int32_t* port,
                    const std::string& listener = "") const {
    if (ClusterState* cluster = state->cluster()) {
      auto view = cluster->view();
      const BrokerEndpoint* b = view->FindBroker(node);
      return b != nullptr && b->AddressFor(listener, host, port);
    }
    if (node != node_id) return false;
    AdvertisedFor(listener, host, port);
    return true;
  }
  // This broker's address for clients of listener `listener` (Kafka: the
  // listener a client connected on selects the endpoint it is given);
  // advertised_host/port for an unknown name.
  void AdvertisedFor(const std::string& listener, std::string* host, int32_t* port) const {
    {
      std::lock_guard<std::mutex> lock(endpoints_mu);
      for (const ListenerEndpoint& e : listener_endpoints) {
        if (e.listener_name == listener) {
          *host = e.host;
          *port = e.port;
          return;
        }
      }
    }
    *host = advertised_host;
    *port = advertised_port.load();
  }
  void set_listener_endpoints(std::vector<ListenerEndpoint> endpoints) {
    std::lock_guard<std::mutex> lock(endpoints_mu);
    listener_endpoints = std::move(endpoints);
  }
  // The broker coordinating `group_id`: this node, or in cluster mode the
  // leader of the group's partition of __consumer_offsets (-1: none yet;
  // docs/cluster.md).
  int32_t group_coordinator_id(std::string_view group_id) const;  // find_coordinator.cc
  // The broker coordinating `transactional_id`: this node, or in cluster
  // mode the leader of the id's partition of __transaction_state (-1: none
  // yet).
  int32_t txn_coordinator_id(std::string_view transactional_id) const;  // find_coordinator.cc
};

class Request {
 public:
  Request(protocol::RequestHeader header, net::ConnectionInfo conn, net::Responder respond)
      : header_(std::move(header)), conn_(std::move(conn)), respond_(std::move(respond)) {}

  int16_t version() const { return header_.request_api_version; }
  int16_t api_key() const { return header_.request_api_key; }
  const protocol::RequestHeader& header() const { return header_; }
  const net::ConnectionInfo& connection() const { return conn_; }
  // Who sent it (net/session.h); an anonymous PLAINTEXT session when the
  // handler is called directly by a test.
  const net::Session& session() const {
    static const net::Session kAnonymous;
    return conn_.session ? *conn_.session : kAnonymous;
  }

  // The session to change: the SASL handlers record the exchange and its
  // outcome here. REQUIRES: called on the connection's I/O thread before the
  // handler returns — the dispatcher calls handlers there and dispatches the
  // connection's next request only after, so the next request sees the
  // change (net/session.h). Null for handlers called directly by a test.
  net::Session* mutable_session() const { return conn_.session.get(); }

  // Encodes `body` at this request's version, with its correlation id, and
  // sends it. A throttled request (AddThrottle) answers with the larger of
  // its own and the body's throttle_time_ms, where the response has one.
  template <typename Response>
  void Reply(const Response& body) const {
    OutputBuffer out;
    if constexpr (requires(const Response& r) { r.throttle_time_ms; }) {
      if (throttle_ms_ > body.throttle_time_ms) {
        Response throttled = body;  // only throttled answers pay for the copy
        throttled.throttle_time_ms = throttle_ms_;
        protocol::EncodeResponse(out, header_.correlation_id, header_.request_api_version,
                                 throttled);
        Send(net::Reply::Respond(std::move(out)));
        return;
      }
    }
    protocol::EncodeResponse(out, header_.correlation_id, header_.request_api_version, body);
    Send(net::Reply::Respond(std::move(out)));
  }
  // Encodes and sends `body`, then closes the connection (logging `why`).
  template <typename Response>
  void ReplyThenClose(const Response& body, std::string why) const {
    OutputBuffer out;
    protocol::EncodeResponse(out, header_.correlation_id, header_.request_api_version, body);
    Send(net::Reply::RespondThenClose(std::move(out), std::move(why)));
  }
  // Sends an already encoded response (header included).
  void ReplyEncoded(OutputBuffer out) const { Send(net::Reply::Respond(std::move(out))); }
  // Answers nothing (Produce with acks=0).
  void NoResponse() const { Send(net::Reply::NoResponse()); }
  // Closes the connection after earlier responses, logging `why`.
  void Close(std::string why) const { Send(net::Reply::Close(std::move(why))); }
  // From now on, answering records the request's latency by API into `m`
  // (null: nothing recorded; docs/metrics.md). Called by the Dispatcher.
  void TimeInto(BrokerMetrics* m) {
    metrics_ = m;
    if (m != nullptr) arrived_ = BrokerMetrics::Clock::now();
  }
  // Client quotas: the request's client id ("" when null), its size on the
  // wire, and the throttle it earned (ms): answered as throttle_time_ms and
  // the connection is muted that long once the answer is released
  // (net::Reply::throttle_ms), as Kafka does since KIP-219.
  std::string_view client_id() const {
    return header_.client_id ? std::string_view(*header_.client_id) : std::string_view();
  }
  int32_t frame_bytes() const { return frame_bytes_; }
  void set_frame_bytes(int32_t n) { frame_bytes_ = n; }
  int32_t throttle_ms() const { return throttle_ms_; }
  void AddThrottle(int32_t ms) { throttle_ms_ = std::max(throttle_ms_, ms); }
  void ClearThrottle() { throttle_ms_ = 0; }
  // Starts the throttle earned so far now instead of at the answer: the
  // connection reads and dispatches nothing more for throttle_ms() from
  // here (the answer extends it again, from its own release). For a request
  // answered later from another thread (Produce on the log writers): the
  // requests framed behind it wait as they would behind an answer given
  // within the handler. REQUIRES: the connection's I/O thread, inside the
  // handler. Without a connection gate (tests) it does nothing.
  void MuteNow() const {
    if (throttle_ms_ > 0 && conn_.throttled_until) {
      net::ExtendThrottle(*conn_.throttled_until, throttle_ms_);
    }
  }
  // The connection's own I/O thread (null when the handler is called
  // directly by a test): where delayed completions run (Purgatory::Wait).
  const std::shared_ptr<net::LoopExecutor>& executor() const { return conn_.executor; }
  // Runs `fn` on the connection's own I/O thread (inline without an
  // executor): a completion that arrives on a foreign thread (another
  // member's JoinGroup, the group timer) encodes its answer there.
  void RunOnLoop(std::function<void()> fn) const {
    if (conn_.executor) conn_.executor->Post(std::move(fn));
    else fn();
  }

 private:
  void Send(net::Reply reply) const {
    reply.throttle_ms = throttle_ms_;
    if (metrics_ != nullptr)
      metrics_->RecordRequest(api_key(), BrokerMetrics::Clock::now() - arrived_);
    respond_(std::move(reply));
  }

  protocol::RequestHeader header_;
  net::ConnectionInfo conn_;
  net::Responder respond_;
  BrokerMetrics* metrics_ = nullptr;
  BrokerMetrics::Clock::time_point arrived_{};
  int32_t frame_bytes_ = 0;
  int32_t throttle_ms_ = 0;
};

// Decodes the body (`body` is positioned after the header) and answers.
using HandleFn = void (*)(BrokerContext& ctx, protocol::Reader& body, Request req);

struct ApiHandler {
  int16_t api_key;
  int16_t min_version;
  int16_t max_version;
  HandleFn handle;
};

// Every handler, ordered by API key. The ApiVersions response lists exactly
// these with their ranges.
std::span<const ApiHandler* const> AllHandlers();
// The handler for `api_key`, or nullptr.
const ApiHandler* FindHandler(int16_t api_key);

// Adapts `Fn(BrokerContext&, Req&, Request)` to HandleFn: decodes Req at the
// request's version and closes the connection on a malformed body (as Kafka
// does), naming the API and version in the log line.
template <typename Req, void (*Fn)(BrokerContext&, Req&, Request)>
void DecodeThen(BrokerContext& ctx, protocol::Reader& body, Request req) {
  Req msg;
  Status st = msg.Decode(body, req.version());
  if (!st.ok()) {
    const protocol::ApiInfo* info = protocol::FindApi(req.api_key());
    req.Close(std::string("malformed ") + (info ? info->name : "request") + " v" +
              std::to_string(req.version()) + ": " + st.message());
    return;
  }
  Fn(ctx, msg, std::move(req));
}

// Builds the ApiHandler for Req handled by Fn, supporting [min_v, max_v].
template <typename Req, void (*Fn)(BrokerContext&, Req&, Request)>
constexpr ApiHandler MakeHandler(int16_t min_v, int16_t max_v) {
  return ApiHandler{Req::kApiKey, min_v, max_v, &DecodeThen<Req, Fn>};
}

// Runs Fn on the admin worker instead of the network thread, for requests
// that make, fsync or remove directories and files (broker/topics/admin_worker.h):
//   MakeHandler<Req, OnAdminWorker<Req, HandleX>>(min, max)
template <typename Req, void (*Fn)(BrokerContext&, Req&, Request)>
void OnAdminWorker(BrokerContext& ctx, Req& req, Request request) {
  ctx.state->admin_worker().Post(
      [&ctx, req = std::move(req), request = std::move(request)]() mutable {
        Fn(ctx, req, std::move(request));
      });
}

}  // namespace headrace::broker
