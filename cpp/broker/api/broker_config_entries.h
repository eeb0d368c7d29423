// What DescribeConfigs reports for the BROKER resource: this broker's
// settings (server.properties names), each STATIC_BROKER_CONFIG when set
// explicitly and DEFAULT_CONFIG otherwise. Dynamic broker configuration is
// not supported, so every entry is read-only.
#pragma once

#include <vector>

#include "broker/api/handler.h"
#include "broker/topic_config.h"

namespace headrace::broker {

// Every broker setting, sorted by name. listeners/advertised.listeners show
// the actual bound/advertised port (port 0 resolved).
std::vector<ConfigEntry> DescribeBrokerConfigs(const BrokerContext& ctx);
// The same for a config that is not serving: listeners show `config`'s port
// unless it is 0 (then `advertised_port`), advertised.listeners show
// advertised_host:advertised_port.
std::vector<ConfigEntry> DescribeBrokerConfigs(const BrokerConfig& config,
                                               const std::string& advertised_host,
                                               int32_t advertised_port);

}  // namespace headrace::broker
