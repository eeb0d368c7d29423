// BrokerImpl: listeners, their TLS contexts and the addresses Metadata
// advertises (static and dynamic advertised.listeners).
#include "broker/server/broker_impl.h"

#include <algorithm>

#include "common/logging.h"

namespace headrace {

std::string BrokerImpl::listen_address() const {
  const broker::Listener& first = config_.listeners.front();
  int port = server_ ? server_->port() : first.port;
  return first.host + ":" + std::to_string(port);
}

std::string BrokerImpl::advertised_address() const {
  if (config_.cluster_mode() && server_) {  // what the other brokers connect to
    std::string host;
    int32_t port = 0;
    ctx_.AdvertisedFor(config_.inter_broker_listener(), &host, &port);
    return host + ":" + std::to_string(port);
  }
  return ctx_.advertised_host + ":" + std::to_string(ctx_.advertised_port.load());
}

std::string BrokerImpl::advertised_endpoints() const {
  std::string out;
  for (const broker::Listener& l : config_.listeners) {
    broker::Listener a = *config_.advertised_for(l.name);
    if (server_) ctx_.AdvertisedFor(l.name, &a.host, &a.port);  // bound ports
    if (!out.empty()) out += ',';
    out += a.ToString();
  }
  return out;
}

std::string BrokerImpl::listener_protocols() const {
  std::string out;
  for (const broker::Listener& l : config_.listeners) {
    if (!out.empty()) out += ',';
    out += l.name;
    out += ':';
    out += broker::SecurityProtocolName(config_.protocol_of(l));
  }
  return out;
}

Status BrokerImpl::BuildTlsContexts() {
  tls_contexts_.clear();
  for (const broker::Listener& l : config_.listeners) {
    net::SecurityProtocol p = config_.protocol_of(l);
    if (p != net::SecurityProtocol::kSsl && p != net::SecurityProtocol::kSaslSsl) continue;
    HR_ASSIGN_OR_RETURN(net::TlsSettings settings, ssl_config_.TlsSettingsFor(l.name));
    HR_ASSIGN_OR_RETURN(std::shared_ptr<net::TlsContext> tls, net::TlsContext::Create(settings));
    tls_contexts_[l.name] = std::move(tls);
  }
  return Status::OK();
}

void BrokerImpl::SetListenerEndpoints(const std::vector<broker::Listener>& advertised) {
  std::vector<broker::ListenerEndpoint> endpoints;
  for (size_t i = 0; i < config_.listeners.size(); ++i) {
    const broker::Listener& l = config_.listeners[i];
    auto a = std::find_if(advertised.begin(), advertised.end(),
                          [&l](const broker::Listener& x) { return x.name == l.name; });
    if (a != advertised.end()) {
      endpoints.push_back({l.name, a->host, a->port});
    } else {
      endpoints.push_back({l.name, l.host, l.port == 0 ? bound_ports_[i] : l.port});
    }
  }
  ctx_.set_listener_endpoints(std::move(endpoints));
}

std::vector<broker::Listener> BrokerImpl::EffectiveAdvertised(const broker::DynamicBrokerLayers& l) const {
  auto it = l.per_broker.find("advertised.listeners");
  if (it == l.per_broker.end()) return config_.advertised_listeners;
  auto parsed = config_.ParseAdvertisedListeners(it->second);
  if (parsed.ok()) return std::move(parsed).value();
  HR_LOG(kWarn) << "dynamic advertised.listeners '" << it->second
                << "' ignored: " << parsed.status().message();
  return config_.advertised_listeners;
}

void BrokerImpl::FollowAdvertisedListeners() {
  broker::DynamicBrokerConfig& dynamic = state_->dynamic_config();
  {
    std::lock_guard<std::mutex> lock(advertised_mu_);
    advertised_now_ = EffectiveAdvertised(dynamic.layers());
    SetListenerEndpoints(advertised_now_);
  }
  dynamic.Subscribe([this](const broker::DynamicBrokerLayers& layers) {
    std::vector<broker::Listener> next = EffectiveAdvertised(layers);
    std::lock_guard<std::mutex> lock(advertised_mu_);
    if (next == advertised_now_) return;
    advertised_now_ = std::move(next);
    SetListenerEndpoints(advertised_now_);
    std::string shown;
    for (const broker::Listener& l : advertised_now_) shown += (shown.empty() ? "" : ",") + l.ToString();
    HR_LOG(kInfo) << "advertised.listeners now "
                  << (shown.empty() ? "the listeners' own addresses" : shown);
  });
}

net::ServerOptions BrokerImpl::ServerOptions() const {
  net::ServerOptions opts;
  opts.listeners.clear();
  for (const broker::Listener& l : config_.listeners) {
    net::ListenAddress a{l.host, static_cast<uint16_t>(l.port), l.ToString(), l.name,
                         config_.protocol_of(l), nullptr};
    if (auto it = tls_contexts_.find(l.name); it != tls_contexts_.end()) a.tls = it->second;
    opts.listeners.push_back(std::move(a));
  }
  opts.io_threads = config_.io_threads;
  opts.max_request_bytes = config_.socket_request_max_bytes;
  opts.max_connections = config_.max_connections;
  opts.max_connections_per_ip = config_.max_connections_per_ip;
  opts.idle_timeout = std::chrono::milliseconds(config_.connections_max_idle_ms);
  opts.max_queued_request_bytes = config_.queued_max_request_bytes;
  opts.send_buffer_bytes = config_.socket_send_buffer_bytes;
  opts.receive_buffer_bytes = config_.socket_receive_buffer_bytes;
  opts.local_congestion_control = config_.socket_local_congestion_control;
  opts.backend = backend_;
  return opts;
}

}  // namespace headrace
