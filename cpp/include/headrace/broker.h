// A whole single-node broker: data (topics, logs), the Kafka API handlers and
// the network server. This is what `headrace broker` runs through the Cython
// binding. All request handling happens on C++ threads; nothing here calls
// into Python.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "headrace/status.h"

namespace headrace {

class Broker {
 public:
  // `settings` are Kafka broker config keys and values ("log.dirs",
  // "listeners", "log.retention.ms", ...); unset keys keep their defaults.
  // Errors: InvalidArgument naming the key for a bad value, NotFound for an
  // unknown key.
  static Result<std::unique_ptr<Broker>> Create(const std::map<std::string, std::string>& settings);
  virtual ~Broker() = default;

  // Opens the data directory (recovering every log) and starts serving.
  // Returns once the listening socket accepts connections.
  virtual Status Start() = 0;
  // Stops accepting, lets in-flight requests finish, flushes and closes every
  // log. Idempotent.
  virtual Status Stop() = 0;

  virtual std::string listen_address() const = 0;      // "host:port", actual port
  virtual std::string advertised_address() const = 0;  // what Metadata tells clients
  // Every listener's advertised endpoint, "NAME://host:port,..." (bound ports
  // after Start()), and "NAME:PROTOCOL,..." for each of them: what a cluster
  // member registers in /brokers/ids/<id> (docs/security.md "Listeners").
  virtual std::string advertised_endpoints() const = 0;
  virtual std::string listener_protocols() const = 0;
  virtual int32_t node_id() const = 0;
  virtual std::string data_dir() const = 0;
  virtual std::string network_backend() const = 0;     // "io_uring" | "epoll"
  virtual std::string cluster_id() const = 0;          // valid after Start()

  // --- observability (docs/metrics.md) ---
  // The metrics page in Prometheus text format 0.0.4; "" when not started,
  // or when Start/Stop/ApplyClusterState holds the broker for over 0.5 s.
  virtual std::string MetricsText() = 0;
  // Why the broker is not ready to serve, as one line; "" when it is:
  // started with its listeners accepting, every data directory taking a
  // small write + fsync (probed at most once a second), and in cluster mode
  // the control plane's first state applied.
  virtual std::string ReadinessProblem() = 0;
  // headrace.http.listen: where the HTTP listener of `headrace broker`
  // serves /metrics, /healthz and /readyz ("" = off).
  virtual std::string http_listen() const = 0;

  // --- the web console's checks (docs/console.md "Mutual TLS") ---
  // Whether `principal` ("User:...") connecting from `host` (an IP address)
  // may do `operation` ("Read", "Describe", ...) on `resource_type`
  // ("Topic", "Group", "Cluster", "TransactionalId") `name`, decided by the
  // authorizer exactly as for a Kafka request of that principal (ACLs,
  // super.users, allow.everyone.if.no.acl.found); true without one.
  // InvalidArgument for an unknown operation or resource type. Any thread.
  virtual Status Authorize(const std::string& principal, const std::string& host,
                           const std::string& operation, const std::string& resource_type,
                           const std::string& name, bool* allowed) const = 0;

  // --- cluster mode (zookeeper.connect set; docs/cluster.md) ---
  // The control plane's view of the cluster (JSON, the apply_cluster
  // document): publishes it for Metadata & co and makes the local replicas
  // leaders or followers. Errors: InvalidArgument (malformed document,
  // nothing applied), Unsupported (not in cluster mode or not
  // started). Per-partition failures are logged and returned in `report`
  // ("topic-p: why" lines) without failing the call.
  virtual Status ApplyClusterState(const std::string& state_json,
                                   std::vector<std::string>* report) = 0;
  // ISR changes proposed by the partitions this broker leads, as a JSON
  // array (docs/cluster.md), each returned once. "[]" when none.
  virtual std::string TakeIsrChanges() = 0;
  // The local replicas that are offline because their log directory failed
  // (log.dirs), as a JSON array [{"topic": "t", "partition": 0}, ...] sorted
  // by topic and partition; "[]" when none. The control plane reports them
  // to the controller, which moves their leadership (docs/cluster.md).
  virtual std::string OfflineReplicas() = 0;
  // The next admin request for the control plane, waiting up to
  // `timeout_ms`; false when none came (or the broker stopped).
  virtual bool NextControlRequest(int64_t timeout_ms, uint64_t* id, std::string* kind,
                                  std::string* payload) = 0;
  // Answers request `id` with `result_json`; false if it is unknown (it
  // timed out meanwhile).
  virtual bool CompleteControlRequest(uint64_t id, const std::string& result_json) = 0;
};

// The principal an SSL listener with client authentication gives a client
// presenting the DER-encoded certificate `der` ("User:CN=a,OU=b,O=c"); ""
// if `der` is not a certificate. The caller verifies the certificate.
std::string CertificatePrincipal(const std::string& der);

}  // namespace headrace
