// Listener addresses: the `listeners` / `advertised.listeners` values
// (Kafka's "NAME://host:port,NAME://host:port" form). Accepted names:
// PLAINTEXT and SASL_PLAINTEXT (SASL over plaintext, docs/security.md); any
// other (SSL, SASL_SSL, a custom name) is an error rather than a listener
// silently served in plaintext or dropped.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "headrace/status.h"

namespace headrace::broker {

struct Listener {
  std::string name = "PLAINTEXT";  // the security protocol / listener name
  std::string host;                // "" = every interface
  int32_t port = 0;                // 0 = a port the OS picks
  // "PLAINTEXT://host:port" ("[v6]" hosts keep their brackets).
  std::string ToString() const;
  bool operator==(const Listener&) const = default;
};

// Parses a comma-separated list of `NAME://host:port` (a bare `host:port`
// is PLAINTEXT; IPv6 hosts in brackets). Errors (InvalidArgument, prefixed
// with `key` and naming the offending listener): an empty list or entry, a
// name other than PLAINTEXT, a missing or out-of-range port, two listeners
// on the same non-zero port.
Result<std::vector<Listener>> ParseListeners(std::string_view key, std::string_view value);

}  // namespace headrace::broker
