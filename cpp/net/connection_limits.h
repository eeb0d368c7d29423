// ConnectionLimits: the open connections of one Server, in total and per
// client IP (max.connections, max.connections.per.ip). The acceptor admits
// each new socket; whichever loop closes it releases it. Thread-safe.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace headrace::net {

class ConnectionLimits {
 public:
  // max_total <= 0: no total limit. max_per_ip < 0: no per-IP limit (0
  // refuses every connection, as in Kafka).
  ConnectionLimits(int max_total, int max_per_ip) : max_total_(max_total), max_per_ip_(max_per_ip) {}

  enum class Verdict { kAdmitted, kOverTotal, kOverPerIp };
  // Counts a new connection from `ip` unless that would exceed a limit.
  Verdict Admit(const std::string& ip);
  // Uncounts a connection Admit()ted for `ip`.
  void Release(const std::string& ip);
  int active() const;
  int active_from(const std::string& ip) const;
  // Since the server started (docs/metrics.md): admitted, released, and
  // refused over a limit.
  struct Totals {
    uint64_t admitted = 0, released = 0, refused = 0;
  };
  Totals totals() const;

 private:
  const int max_total_;
  const int max_per_ip_;
  mutable std::mutex mu_;  // guards the fields below
  int active_ = 0;
  Totals totals_;
  std::unordered_map<std::string, int> per_ip_;  // only IPs with connections
};

// The IP part of a PeerName() ("1.2.3.4:5" -> "1.2.3.4", "[::1]:5" -> "::1").
std::string_view IpOfPeer(std::string_view peer);

}  // namespace headrace::net
