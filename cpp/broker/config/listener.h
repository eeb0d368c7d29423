// Listener addresses and their security protocols: the `listeners` /
// `advertised.listeners` values (Kafka's "NAME://host:port,..." form) and
// `listener.security.protocol.map` ("NAME:PROTOCOL,..."). A listener name is
// any upper-case identifier; its protocol comes from the map (Kafka's default
// maps PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL to themselves), so
// `INTERNAL://:9093` with `INTERNAL:SSL` in the map is a TLS listener. A name
// the map does not know, or a protocol other than those four, stops the
// broker with one error line (BrokerConfig::Validate). docs/security.md.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "headrace/status.h"
#include "net/session.h"

namespace headrace::broker {

struct Listener {
  std::string name = "PLAINTEXT";  // the listener name (upper case)
  std::string host;                // "" = every interface
  int32_t port = 0;                // 0 = a port the OS picks
  // "PLAINTEXT://host:port" ("[v6]" hosts keep their brackets).
  std::string ToString() const;
  bool operator==(const Listener&) const = default;
};

// Parses a comma-separated list of `NAME://host:port` (a bare `host:port`
// is PLAINTEXT; IPv6 hosts in brackets). Errors (InvalidArgument, prefixed
// with `key` and naming the offending listener): an empty list or entry, a
// name that is not [A-Za-z0-9_]+, a missing or out-of-range port, two
// listeners with one name or on the same non-zero port.
Result<std::vector<Listener>> ParseListeners(std::string_view key, std::string_view value);

// Kafka's default listener.security.protocol.map.
inline constexpr const char* kDefaultProtocolMap =
    "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL";

// "PLAINTEXT" | "SSL" | "SASL_PLAINTEXT" | "SASL_SSL" (case-insensitive).
Result<net::SecurityProtocol> ParseSecurityProtocol(std::string_view name);
const char* SecurityProtocolName(net::SecurityProtocol p);

// Parses `NAME:PROTOCOL,...` (names upper-cased). Errors: an entry without
// ':', an unknown protocol, a name given twice.
Result<std::map<std::string, net::SecurityProtocol>> ParseProtocolMap(std::string_view key,
                                                                      std::string_view value);

}  // namespace headrace::broker
