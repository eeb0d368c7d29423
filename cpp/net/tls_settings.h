// TlsSettings: what one TLS listener is configured with, already read from
// the broker's ssl.* / listener.name.<name>.ssl.* keys (broker/config/ssl_config.h)
// as plain values. TlsContext (tls_context.h) turns it into an OpenSSL
// context. No OpenSSL types here: the broker's config code includes it.
#pragma once

#include <string>
#include <vector>

namespace headrace::net {

enum class ClientAuth { kNone, kRequested, kRequired };  // ssl.client.auth

struct TlsSettings {
  // ssl.keystore.*: the broker's private key and its certificate chain
  // (leaf first), PEM. `key_password` decrypts an encrypted key.
  std::string key_pem;
  std::string cert_chain_pem;
  std::string key_password;
  // ssl.truststore.*: CA certificates (PEM) that client certificates must
  // chain to; "" = none (a client certificate then never verifies).
  std::string trust_pem;
  ClientAuth client_auth = ClientAuth::kNone;
  // ssl.enabled.protocols: a subset of "TLSv1.2", "TLSv1.3".
  std::vector<std::string> protocols = {"TLSv1.2", "TLSv1.3"};
  // ssl.cipher.suites: IANA names (as Kafka / JSSE take them, e.g.
  // TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TLS_AES_128_GCM_SHA256) or
  // OpenSSL names; empty = OpenSSL's defaults.
  std::vector<std::string> cipher_suites;
  // Whether the principal of an SSL (not SASL_SSL) connection comes from
  // the client certificate's subject (always, as Kafka's default builder).
  // Try kernel TLS for sending (when the kernel has it).
  bool try_ktls = true;
  // Client side only (TlsContext::CreateClient): check the server
  // certificate's names against the host connected to
  // (ssl.endpoint.identification.algorithm=https); false = chain only.
  bool verify_hostname = true;
  // For messages: "listener SSL".
  std::string what = "TLS";
};

}  // namespace headrace::net
