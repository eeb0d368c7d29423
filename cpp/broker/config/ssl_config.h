// Settings of TLS listeners (Kafka's ssl.* broker properties): one config
// table (config_table.h), plus Kafka's per-listener overrides
// `listener.name.<listener>.ssl.<key>`, which replace the ssl.* value for
// that listener only. docs/security.md "TLS" and docs/configuration.md
// describe them. TlsSettingsFor() reads the PEM files and gives what the
// network layer builds a listener's OpenSSL context from.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "broker/config/config_table.h"
#include "net/tls_settings.h"

namespace headrace::broker {

struct SslConfig {
  std::string keystore_type = "JKS";           // ssl.keystore.type (only PEM is served)
  std::string keystore_location;               // ssl.keystore.location: key + chain, PEM
  std::string keystore_password;               // ssl.keystore.password (no effect for PEM)
  std::string keystore_key;                    // ssl.keystore.key: inline PEM key
  std::string keystore_certificate_chain;      // ssl.keystore.certificate.chain: inline PEM
  std::string key_password;                    // ssl.key.password: of an encrypted key
  std::string truststore_type = "JKS";         // ssl.truststore.type (only PEM)
  std::string truststore_location;             // ssl.truststore.location: CAs, PEM
  std::string truststore_password;             // ssl.truststore.password (no effect for PEM)
  std::string truststore_certificates;         // ssl.truststore.certificates: inline PEM CAs
  net::ClientAuth client_auth = net::ClientAuth::kNone;  // ssl.client.auth
  std::vector<std::string> enabled_protocols = {"TLSv1.2", "TLSv1.3"};  // ssl.enabled.protocols
  std::string protocol = "TLSv1.3";            // ssl.protocol
  std::vector<std::string> cipher_suites;      // ssl.cipher.suites ("" = OpenSSL defaults)
  std::string principal_mapping_rules = "DEFAULT";  // ssl.principal.mapping.rules
  std::string endpoint_identification_algorithm = "https";  // inter-broker TLS: "https" or ""
  bool ktls = true;                            // headrace.ssl.ktls.enable
  // listener.name.<LISTENER>.ssl.<key> -> value, by upper-case listener name.
  std::map<std::string, std::map<std::string, std::string>> listener_overrides;

  // Sets one ssl.* property (or a listener.name.<l>.ssl.* override). NotFound
  // for a key that is not one; InvalidArgument naming the key for a bad value.
  Status Set(const std::string& key, const std::string& value);
  std::vector<SettingDoc> Describe() const;
  // Whether `key` is a listener.name.<listener>.ssl.* override.
  static bool IsListenerOverride(const std::string& key);
  // Moves every ssl.* key and listener.name.*.ssl.* override out of `props`.
  Status Extract(std::map<std::string, std::string>& props);

  // The TLS settings of listener `listener` (upper case): these keys with
  // its overrides applied, the PEM files read. InvalidArgument naming the
  // listener and key for a missing keystore, a non-PEM store type or an
  // unreadable file.
  Result<net::TlsSettings> TlsSettingsFor(const std::string& listener) const;
};

}  // namespace headrace::broker
