// The broker's /metrics page (Prometheus text format 0.0.4; every metric is
// listed in docs/metrics.md): the counters and histograms the data path
// recorded (BrokerMetrics) plus gauges read from the broker's state now —
// partitions, segments and log sizes per topic, purgatory waiters,
// consumer-group lag, transactions, under-replicated partitions.
//
// Runs on the scraping thread; takes the locks a reader of that state takes
// (topic registry, coordinators, purgatory) for a moment, never a lock of
// the hot path of recording.
#pragma once

#include <string>

#include "broker/api/handler.h"
#include "broker/base/broker_metrics.h"
#include "net/connection_limits.h"
#include "net/stall_clock.h"

namespace headrace::broker {

struct ServerGauges {
  int active_connections = 0;
  net::ConnectionLimits::Totals connections;
  net::StallCounters::Totals stalls;  // network-thread stalls (net/stall_clock.h)
};

// `metrics` null: only the scrape-time gauges (metrics are off).
std::string RenderMetrics(BrokerContext& ctx, const BrokerMetrics* metrics,
                          const ServerGauges& server);

}  // namespace headrace::broker
