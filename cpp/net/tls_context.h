// TlsContext: one listener's OpenSSL server context (SSL_CTX) built from
// TlsSettings: key and certificate chain, trusted CAs and client-auth mode,
// protocol versions and cipher suites. Immutable once built; shared by every
// connection of the listener across I/O threads (OpenSSL contexts are
// thread-safe for creating connections). See docs/security.md "TLS".
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
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  ssl_ctx_st* ssl_ctx() const { return ctx_; }
  ClientAuth client_auth() const { return client_auth_; }
  // Whether connections ask OpenSSL for kernel TLS (SSL_OP_ENABLE_KTLS):
  // only when the kernel has the "tls" TCP ULP (KernelTlsAvailable()).
  bool ktls_enabled() const { return ktls_; }
  // What the start-up line says: "kTLS" or "OpenSSL copy (<why>)".
  const std::string& send_path() const { return send_path_; }

 private:
  TlsContext() = default;
  ssl_ctx_st* ctx_ = nullptr;
  ClientAuth client_auth_ = ClientAuth::kNone;
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
