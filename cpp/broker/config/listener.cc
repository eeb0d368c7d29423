#include "broker/config/listener.h"

#include <algorithm>
#include <cctype>

#include "broker/config/topic_config.h"

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
  if (l.name.empty() || !std::all_of(l.name.begin(), l.name.end(), [](unsigned char ch) {
        return std::isalnum(ch) || ch == '_';
      })) {
    return Bad(key, entry, "a listener name is letters, digits and '_'");
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
      if (other.name == l.name) {
        return Bad(key, entry, "listener name " + l.name + " is used twice (each listener needs "
                               "its own name)");
      }
    }
    out.push_back(std::move(l));
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return out;
}

Result<net::SecurityProtocol> ParseSecurityProtocol(std::string_view name) {
  std::string n = Upper(Trim(name));
  if (n == "PLAINTEXT") return net::SecurityProtocol::kPlaintext;
  if (n == "SSL") return net::SecurityProtocol::kSsl;
  if (n == "SASL_PLAINTEXT") return net::SecurityProtocol::kSaslPlaintext;
  if (n == "SASL_SSL") return net::SecurityProtocol::kSaslSsl;
  return Status::InvalidArgument("unknown security protocol " + std::string(name) +
                                 " (PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)");
}

const char* SecurityProtocolName(net::SecurityProtocol p) {
  switch (p) {
    case net::SecurityProtocol::kPlaintext: return "PLAINTEXT";
    case net::SecurityProtocol::kSsl: return "SSL";
    case net::SecurityProtocol::kSaslPlaintext: return "SASL_PLAINTEXT";
    case net::SecurityProtocol::kSaslSsl: return "SASL_SSL";
  }
  return "?";
}

Result<std::map<std::string, net::SecurityProtocol>> ParseProtocolMap(std::string_view key,
                                                                      std::string_view value) {
  std::map<std::string, net::SecurityProtocol> out;
  while (!Trim(value).empty()) {
    size_t comma = value.find(',');
    std::string_view entry = Trim(value.substr(0, comma));
    size_t colon = entry.find(':');
    if (colon == std::string_view::npos) return Bad(key, entry, "expected NAME:PROTOCOL");
    std::string name = Upper(Trim(entry.substr(0, colon)));
    auto protocol = ParseSecurityProtocol(entry.substr(colon + 1));
    if (!protocol.ok()) return Bad(key, entry, protocol.status().message());
    if (!out.emplace(name, *protocol).second) return Bad(key, entry, name + " is mapped twice");
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace headrace::broker
