#include "broker/listener.h"

#include <algorithm>
#include <cctype>

#include "broker/topic_config.h"

namespace headrace::broker {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string Upper(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::toupper(ch)); });
  return out;
}

Status Bad(std::string_view key, std::string_view entry, const std::string& rule) {
  return Status::InvalidArgument(std::string(key) + ": " + std::string(entry) + ": " + rule);
}

Result<Listener> ParseOne(std::string_view key, std::string_view entry) {
  Listener l;
  std::string_view rest = entry;
  if (size_t scheme = rest.find("://"); scheme != std::string_view::npos) {
    l.name = Upper(rest.substr(0, scheme));
    rest.remove_prefix(scheme + 3);
  }
  if (l.name != "PLAINTEXT" && l.name != "SASL_PLAINTEXT") {  // (SASL_PLAINTEXT: docs/security.md)
    bool known = l.name == "SSL" || l.name == "SASL_SSL" || l.name == "SASL_PLAINTEXT";
    return Bad(key, entry,
               known ? l.name + " is not supported (no TLS/SASL yet); only PLAINTEXT listeners"
                     : "unknown listener name " + l.name + " (only PLAINTEXT is supported)");
  }
  size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos) return Bad(key, entry, "expected [PLAINTEXT://]host:port");
  auto port = ParseConfigInt(rest.substr(colon + 1), 0, 65535);
  if (!port.ok()) return Bad(key, entry, "port must be an integer between 0 and 65535");
  std::string_view host = rest.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return Bad(key, entry, "an IPv6 host must be in brackets, e.g. [::1]:9092");
  }
  l.host = std::string(host);
  l.port = static_cast<int32_t>(port.value());
  return l;
}

}  // namespace

std::string Listener::ToString() const {
  bool v6 = host.find(':') != std::string::npos;
  return name + "://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<std::vector<Listener>> ParseListeners(std::string_view key, std::string_view value) {
  const std::string_view all = value;
  std::vector<Listener> out;
  while (true) {
    size_t comma = value.find(',');
    std::string_view entry = Trim(value.substr(0, comma));
    if (entry.empty()) {
      return Status::InvalidArgument(std::string(key) + ": empty listener in '" +
                                     std::string(all) + "'");
    }
    HR_ASSIGN_OR_RETURN(Listener l, ParseOne(key, entry));
    for (const Listener& other : out) {
      if (l.port != 0 && other.port == l.port) {
        return Bad(key, entry, "port " + std::to_string(l.port) + " is also used by " +
                                   other.ToString());
      }
    }
    out.push_back(std::move(l));
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace headrace::broker
