// Settings of the broker's metrics and its HTTP listener (docs/metrics.md,
// docs/configuration.md). The listener itself is served by the Python
// process (headrace/http_server.py); the core validates and reports the
// key so that `headrace config show` and Broker::Create know it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "broker/config/config_table.h"

namespace headrace::broker {

struct MetricsConfig {
  // headrace.http.listen: HOST:PORT of /metrics, /healthz and /readyz;
  // "" = no HTTP listener. Port 0 = an ephemeral port.
  std::string http_listen = "127.0.0.1:9644";
  // headrace.metrics.enable: record request, topic, fsync and ISR metrics
  // on the data path. Off only to measure their cost (docs/performance.md);
  // scrape-time gauges are reported either way.
  bool enabled = true;

  Status Set(const std::string& key, const std::string& value);
  std::vector<SettingDoc> Describe() const;
  // Moves every metrics setting out of `props`. Errors as Set.
  Status Extract(std::map<std::string, std::string>& props);
};

// "" or HOST:PORT with a port in [0, 65535] (IPv6 hosts in brackets).
Status ValidateHttpListen(const std::string& value);

}  // namespace headrace::broker
