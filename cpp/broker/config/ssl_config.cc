#include "broker/config/ssl_config.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

namespace headrace::broker {
namespace {

using Key = ConfigKey<SslConfig>;
constexpr const char* kListenerPrefix = "listener.name.";

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

std::vector<std::string> SplitList(const std::string& v) {
  std::vector<std::string> out;
  std::stringstream in(v);
  std::string item;
  while (std::getline(in, item, ',')) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

Key StringKey(const char* name, const char* doc, std::string SslConfig::*field,
              ConfigType type = ConfigType::kString, std::string valid = "") {
  return Key{name, doc,
             [=](SslConfig& c, const std::string& v) -> Status {
               c.*field = v;
               return Status::OK();
             },
             // Secrets are never shown (DescribeConfigs, `headrace config`).
             [=](const SslConfig& c) {
               return type == ConfigType::kPassword ? std::string() : c.*field;
             },
             type, UpdateMode::kReadOnly, std::move(valid)};
}

Key StoreTypeKey(const char* name, const char* doc, std::string SslConfig::*field) {
  return Key{name, doc,
             [=](SslConfig& c, const std::string& v) -> Status {
               std::string up = v;
               for (char& ch : up) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
               if (up != "PEM" && up != "JKS" && up != "PKCS12") {
                 return Status::InvalidArgument(std::string(name) +
                                                ": must be PEM, JKS or PKCS12, got '" + v + "'");
               }
               c.*field = up;
               return Status::OK();
             },
             [=](const SslConfig& c) { return c.*field; }, ConfigType::kString,
             UpdateMode::kReadOnly, "PEM, PKCS12, JKS (see the note below)"};
}

const std::vector<Key>& Keys() {
  static const std::vector<Key> keys = {
      StoreTypeKey("ssl.keystore.type",
                   "Format of the broker's key store: the core reads PEM; `headrace broker` "
                   "turns a PKCS12 store into inline PEM at start and refuses a real JKS file.",
                   &SslConfig::keystore_type),
      StringKey("ssl.keystore.location",
                "PEM file with the broker's private key and its certificate chain (leaf first).",
                &SslConfig::keystore_location),
      StringKey("ssl.keystore.password", "Accepted for compatibility; no effect for PEM.",
                &SslConfig::keystore_password, ConfigType::kPassword),
      StringKey("ssl.keystore.key", "The broker's private key, inline PEM (instead of a file).",
                &SslConfig::keystore_key, ConfigType::kPassword),
      StringKey("ssl.keystore.certificate.chain",
                "The broker's certificate chain, inline PEM (instead of a file).",
                &SslConfig::keystore_certificate_chain, ConfigType::kPassword),
      StringKey("ssl.key.password", "Password of an encrypted private key.",
                &SslConfig::key_password, ConfigType::kPassword),
      StoreTypeKey("ssl.truststore.type",
                   "Format of the trust store (CAs of client certificates): the core reads PEM; "
                   "`headrace broker` turns a PKCS12 store into inline PEM at start and refuses a "
                   "real JKS file.",
                   &SslConfig::truststore_type),
      StringKey("ssl.truststore.location",
                "PEM file of the CA certificates client certificates must chain to.",
                &SslConfig::truststore_location),
      StringKey("ssl.truststore.password", "Accepted for compatibility; no effect for PEM.",
                &SslConfig::truststore_password, ConfigType::kPassword),
      StringKey("ssl.truststore.certificates", "The trusted CA certificates, inline PEM.",
                &SslConfig::truststore_certificates, ConfigType::kPassword),
      Key{"ssl.client.auth",
          "Client certificates: none, requested (verified when sent) or required; the "
          "principal of an SSL connection is User:<certificate subject, RFC 2253>.",
          [](SslConfig& c, const std::string& v) -> Status {
            if (v == "none") c.client_auth = net::ClientAuth::kNone;
            else if (v == "requested") c.client_auth = net::ClientAuth::kRequested;
            else if (v == "required") c.client_auth = net::ClientAuth::kRequired;
            else return Status::InvalidArgument("ssl.client.auth: must be none, requested or required, got '" + v + "'");
            return Status::OK();
          },
          [](const SslConfig& c) {
            return std::string(c.client_auth == net::ClientAuth::kNone        ? "none"
                               : c.client_auth == net::ClientAuth::kRequested ? "requested"
                                                                              : "required");
          },
          ConfigType::kString, UpdateMode::kReadOnly, "none, requested, required"},
      Key{"ssl.enabled.protocols", "TLS versions accepted.",
          [](SslConfig& c, const std::string& v) -> Status {
            std::vector<std::string> list = SplitList(v);
            if (list.empty()) return Status::InvalidArgument("ssl.enabled.protocols: must not be empty");
            for (const std::string& p : list) {
              if (p != "TLSv1.2" && p != "TLSv1.3")
                return Status::InvalidArgument("ssl.enabled.protocols: " + p +
                                               " is not supported (TLSv1.2, TLSv1.3)");
            }
            c.enabled_protocols = std::move(list);
            return Status::OK();
          },
          [](const SslConfig& c) { return Join(c.enabled_protocols); }, ConfigType::kList,
          UpdateMode::kReadOnly, "TLSv1.2, TLSv1.3"},
      Key{"ssl.protocol",
          "Accepted as Kafka's SSLContext protocol; the versions served are "
          "ssl.enabled.protocols.",
          [](SslConfig& c, const std::string& v) -> Status {
            if (v != "TLS" && v != "TLSv1.2" && v != "TLSv1.3")
              return Status::InvalidArgument("ssl.protocol: must be TLS, TLSv1.2 or TLSv1.3, got '" + v + "'");
            c.protocol = v;
            return Status::OK();
          },
          [](const SslConfig& c) { return c.protocol; }, ConfigType::kString,
          UpdateMode::kReadOnly, "TLS, TLSv1.2, TLSv1.3"},
      Key{"ssl.cipher.suites",
          "Cipher suites allowed (IANA names as Kafka, or OpenSSL names); empty = OpenSSL's "
          "defaults.",
          [](SslConfig& c, const std::string& v) -> Status {
            c.cipher_suites = SplitList(v);
            return Status::OK();
          },
          [](const SslConfig& c) { return Join(c.cipher_suites); }, ConfigType::kList},
      Key{"ssl.principal.mapping.rules",
          "How a certificate subject becomes a principal name; only DEFAULT (the subject as is).",
          [](SslConfig& c, const std::string& v) -> Status {
            if (v != "DEFAULT")
              return Status::InvalidArgument("ssl.principal.mapping.rules: only DEFAULT is supported, got '" + v + "'");
            c.principal_mapping_rules = v;
            return Status::OK();
          },
          [](const SslConfig& c) { return c.principal_mapping_rules; }, ConfigType::kList,
          UpdateMode::kReadOnly, "DEFAULT"},
      Key{"ssl.endpoint.identification.algorithm",
          "Inter-broker TLS: https = a broker checks the other broker's certificate names "
          "(subjectAltName DNS or IP) against the host it connects to; empty = the chain only.",
          [](SslConfig& c, const std::string& v) -> Status {
            std::string low = v;
            for (char& ch : low) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
            if (!low.empty() && low != "https")
              return Status::InvalidArgument(
                  "ssl.endpoint.identification.algorithm: must be https or empty, got '" + v + "'");
            c.endpoint_identification_algorithm = low;
            return Status::OK();
          },
          [](const SslConfig& c) { return c.endpoint_identification_algorithm; },
          ConfigType::kString, UpdateMode::kReadOnly, "https, (empty)"},
      Key{"headrace.ssl.ktls.enable",
          "Use kernel TLS for sending when the kernel has it (zero-copy fetch under TLS); false "
          "= always encrypt through OpenSSL.",
          [](SslConfig& c, const std::string& v) -> Status {
            if (v != "true" && v != "false")
              return Status::InvalidArgument("headrace.ssl.ktls.enable: must be true or false, got '" + v + "'");
            c.ktls = v == "true";
            return Status::OK();
          },
          [](const SslConfig& c) { return std::string(c.ktls ? "true" : "false"); },
          ConfigType::kBoolean},
  };
  return keys;
}

HR_REGISTER_CONFIG_FAMILY(SslConfig, "ssl", &Keys);

// "listener.name.<l>.ssl.<rest>" -> {"<L>", "ssl.<rest>"}; false otherwise.
bool SplitOverride(const std::string& key, std::string* listener, std::string* base) {
  const std::string prefix = kListenerPrefix;
  if (key.compare(0, prefix.size(), prefix) != 0) return false;
  size_t dot = key.find('.', prefix.size());
  if (dot == std::string::npos || key.compare(dot + 1, 4, "ssl.") != 0) return false;
  *listener = key.substr(prefix.size(), dot - prefix.size());
  for (char& ch : *listener) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  *base = key.substr(dot + 1);
  return !listener->empty();
}

Result<std::string> ReadFile(const std::string& key, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::InvalidArgument(key + ": cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

Status SslConfig::Set(const std::string& key, const std::string& value) {
  std::string listener, base;
  if (SplitOverride(key, &listener, &base)) {
    SslConfig scratch;  // validates the value as the base key would
    HR_RETURN_IF_ERROR(SetFromTable(Keys(), scratch, base, value, "ssl"));
    listener_overrides[listener][base] = value;
    return Status::OK();
  }
  return SetFromTable(Keys(), *this, key, value, "ssl");
}

bool SslConfig::IsListenerOverride(const std::string& key) {
  std::string listener, base;
  return SplitOverride(key, &listener, &base);
}

std::vector<SettingDoc> SslConfig::Describe() const { return DescribeTable(Keys(), *this); }

Status SslConfig::Extract(std::map<std::string, std::string>& props) {
  // Set also takes the listener.name.<l>.ssl.* overrides.
  return ExtractKeys(props, [this](const std::string& k, const std::string& v) { return Set(k, v); });
}

Result<net::TlsSettings> SslConfig::TlsSettingsFor(const std::string& listener) const {
  SslConfig c = *this;
  if (auto it = listener_overrides.find(listener); it != listener_overrides.end()) {
    for (const auto& [k, v] : it->second) HR_RETURN_IF_ERROR(SetFromTable(Keys(), c, k, v, "ssl"));
  }
  const std::string where = "listener " + listener;
  auto bad = [&](const std::string& why) { return Status::InvalidArgument(where + ": " + why); };
  net::TlsSettings s;
  s.what = where;
  bool inline_key = !c.keystore_key.empty() || !c.keystore_certificate_chain.empty();
  if (c.keystore_location.empty() && !inline_key) {
    return bad("a TLS listener needs ssl.keystore.location (or ssl.keystore.key and "
               "ssl.keystore.certificate.chain) with ssl.keystore.type=PEM");
  }
  if (c.keystore_type != "PEM") {
    return bad("ssl.keystore.type " + c.keystore_type + " is not supported; use PEM");
  }
  if (!c.keystore_location.empty()) {
    HR_ASSIGN_OR_RETURN(std::string pem, ReadFile(where + ": ssl.keystore.location",
                                                  c.keystore_location));
    s.key_pem = pem;  // one file holds the key and the chain, as Kafka's PEM store
    s.cert_chain_pem = pem;
  } else {
    s.key_pem = c.keystore_key;
    s.cert_chain_pem = c.keystore_certificate_chain;
  }
  s.key_password = c.key_password;
  if (!c.truststore_location.empty() || !c.truststore_certificates.empty()) {
    if (c.truststore_type != "PEM") {
      return bad("ssl.truststore.type " + c.truststore_type + " is not supported; use PEM");
    }
    if (!c.truststore_location.empty()) {
      HR_ASSIGN_OR_RETURN(s.trust_pem, ReadFile(where + ": ssl.truststore.location",
                                                c.truststore_location));
    } else {
      s.trust_pem = c.truststore_certificates;
    }
  } else if (c.client_auth != net::ClientAuth::kNone) {
    return bad("ssl.client.auth=" + std::string(c.client_auth == net::ClientAuth::kRequired
                                                    ? "required"
                                                    : "requested") +
               " needs a truststore (ssl.truststore.location or ssl.truststore.certificates)");
  }
  s.client_auth = c.client_auth;
  s.protocols = c.enabled_protocols;
  s.cipher_suites = c.cipher_suites;
  s.try_ktls = c.ktls;
  s.verify_hostname = c.endpoint_identification_algorithm == "https";
  return s;
}

}  // namespace headrace::broker
