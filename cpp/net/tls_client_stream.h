// TlsClientStream: the client side of TLS on an already connected, blocking
// socket (SO_RCVTIMEO / SO_SNDTIMEO bound every read and write), as the
// broker-to-broker connections use it (replication::LeaderConnection). The
// socket stays owned by the caller: shutting it down from another thread
// (LeaderConnection::Interrupt) makes a handshake, read or write in
// progress fail. Not thread-safe otherwise.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "headrace/status.h"
#include "net/tls_context.h"

struct ssl_st;

namespace headrace::net {

class TlsClientStream {
 public:
  // Handshakes on `fd` with `ctx` (TlsContext::CreateClient). `host` is
  // what the socket connected to: sent as SNI when it is a name, and the
  // server certificate's subjectAltName (DNS or IP) must match it when the
  // context verifies host names. IOError naming the cause (the certificate
  // verification result, OpenSSL's reason, a timeout or a closed socket).
  static Result<std::unique_ptr<TlsClientStream>> Handshake(std::shared_ptr<TlsContext> ctx, int fd,
                                                           const std::string& host);
  ~TlsClientStream();
  TlsClientStream(const TlsClientStream&) = delete;
  TlsClientStream& operator=(const TlsClientStream&) = delete;

  // Writes all of `data`. IOError on failure (the stream is then unusable).
  Status WriteAll(const void* data, size_t n);
  // Reads exactly `n` bytes. IOError on failure; `*timed_out` (may be null)
  // tells a read timeout from another failure; `*closed` a clean close.
  Status ReadAll(void* data, size_t n, bool* timed_out = nullptr, bool* closed = nullptr);
  // The negotiated protocol version ("TLSv1.3").
  std::string version() const;

 private:
  TlsClientStream(std::shared_ptr<TlsContext> ctx, ssl_st* ssl) : ctx_(std::move(ctx)), ssl_(ssl) {}
  std::shared_ptr<TlsContext> ctx_;
  ssl_st* ssl_;
};

}  // namespace headrace::net
