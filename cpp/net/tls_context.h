// TlsContext: one listener's OpenSSL server context (SSL_CTX) built from
// TlsSettings: key and certificate chain, trusted CAs and client-auth mode,
// protocol versions and cipher suites; or (CreateClient) the client context
// a broker connects to other brokers with (inter-broker TLS). Immutable once
// built; shared by every connection using it across threads (OpenSSL
// contexts are thread-safe for creating connections). See docs/security.md
// "TLS" and "Inter-broker security".
#pragma once

#include <memory>
#include <string>

#include "headrace/status.h"
#include "net/tls_settings.h"

struct ssl_ctx_st;

namespace headrace::net {

class TlsContext {
 public:
  // InvalidArgument naming settings.what for an unusable key, certificate,
  // CA list, protocol or cipher list (one line, with OpenSSL's reason).
  static Result<std::shared_ptr<TlsContext>> Create(const TlsSettings& settings);
  // A client context: the server certificate must chain to the settings'
  // truststore (the system's default CAs when it has none), the key and
  // chain (when given) are presented as the client certificate, and
  // settings.verify_hostname asks each connection to check the server's
  // names (TlsClientStream). Same errors as Create.
  static Result<std::shared_ptr<TlsContext>> CreateClient(const TlsSettings& settings);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  ssl_ctx_st* ssl_ctx() const { return ctx_; }
  ClientAuth client_auth() const { return client_auth_; }
  // Client contexts: whether connections verify the server's host name.
  bool verify_hostname() const { return verify_hostname_; }
  // Whether connections ask OpenSSL for kernel TLS (SSL_OP_ENABLE_KTLS):
  // only when the kernel has the "tls" TCP ULP (KernelTlsAvailable()).
  bool ktls_enabled() const { return ktls_; }
  // What the start-up line says: "kTLS" or "OpenSSL copy (<why>)".
  const std::string& send_path() const { return send_path_; }

 private:
  TlsContext() = default;
  ssl_ctx_st* ctx_ = nullptr;
  ClientAuth client_auth_ = ClientAuth::kNone;
  bool verify_hostname_ = false;
  bool ktls_ = false;
  std::string send_path_;
};

// Whether this kernel offers TLS offload (the "tls" TCP upper layer
// protocol, CONFIG_TLS): probed once on a loopback connection. `why` gets
// the reason when not.
bool KernelTlsAvailable(std::string* why = nullptr);

// The last OpenSSL error of this thread as one line (and clears the queue).
std::string TakeOpenSslError();

}  // namespace headrace::net
