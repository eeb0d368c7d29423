// The client host that group APIs report for a connection (JoinGroup,
// ConsumerGroupHeartbeat): "host:port" -> "/host", as Kafka does.
#pragma once

#include <string>

namespace headrace::broker {

inline std::string ClientHost(const std::string& peer) {
  auto colon = peer.rfind(':');
  return "/" + (colon == std::string::npos ? peer : peer.substr(0, colon));
}

}  // namespace headrace::broker
