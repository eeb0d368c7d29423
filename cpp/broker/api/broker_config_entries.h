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
// The same for a config that is not serving: listeners show all of
// `config`'s (the first one's port 0 as `advertised_port` when
// advertised.listeners is not set), advertised.listeners shows
// advertised_host:advertised_port under the first advertised listener's name.
std::vector<ConfigEntry> DescribeBrokerConfigs(const BrokerConfig& config,
                                               const std::string& advertised_host,
                                               int32_t advertised_port);

}  // namespace headrace::broker
