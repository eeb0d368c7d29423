// TlsTransport: the TLS layer of one connection, between the socket and the
// connection's Framer (input) and TransmitQueue (output). Plaintext
// connections have none: the backends move their bytes with recv/sendmsg/
// sendfile directly. A TLS connection's backend calls Read() and Write()
// when the socket is ready in the direction they last asked for (wait());
// both are non-blocking and run the handshake first (OpenSSL on a socket
// BIO, server side), so the handshake is driven by the event loop of
// either backend like any other I/O.
//
// Output goes one of two ways, fixed per connection after the handshake:
//   - kTLS (the kernel encrypts records, BIO_get_ktls_send): byte pieces go
//     through SSL_write, file pieces with SSL_sendfile (zero-copy, as for
//     plaintext);
//   - OpenSSL copy: byte pieces are copied into a staging buffer, file
//     pieces pread into it (their pages are in the page cache: TransmitQueue
//     checked), and SSL_write encrypts from there.
//
// Once the handshake completes on an SSL listener, the Session's principal
// becomes "User:<subject in RFC 2253 form>" of a verified client
// certificate (Kafka's default principal builder); SASL_SSL leaves it to
// SASL. All calls on the connection's I/O thread; no locks, no GIL.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "net/session.h"
#include "net/tls_context.h"
#include "net/transmit_queue.h"

struct ssl_st;

namespace headrace::net {

class TlsTransport {
 public:
  // Staging buffer of the copy path (allocated on first output).
  static constexpr size_t kStageBytes = 64 << 10;
  // What the last Read()/Write() that returned -EAGAIN / 1 waits for.
  enum class Wait { kReadable, kWritable };

  // `fd`: the accepted non-blocking socket (not owned). `session` outlives
  // the transport (the connection's).
  TlsTransport(std::shared_ptr<const TlsContext> ctx, int fd, Session* session);
  ~TlsTransport();
  TlsTransport(const TlsTransport&) = delete;
  TlsTransport& operator=(const TlsTransport&) = delete;

  // Decrypts into dst (handshaking first). Returns > 0 bytes; 0 when the
  // peer closed after the handshake; -EAGAIN when it must wait (read_wait());
  // -EPROTO on a TLS failure (error() says which, one line); other -errno
  // from the socket.
  int64_t Read(std::span<uint8_t> dst);
  Wait read_wait() const { return read_wait_; }
  // Whether Read() can return bytes without the socket becoming readable
  // (decrypted bytes held by OpenSSL).
  bool HasBufferedInput() const;

  // Sends `out` until it is empty. Returns 0 (all sent), 1 (blocked until
  // the socket is writable), 2 (*load is a file range to bring into the
  // page cache first, as TransmitQueue::Kind::kLoad), or -errno / -EPROTO.
  int Write(TransmitQueue& out, TransmitQueue::Piece* load);

  // After a failure, before the socket is closed: discards what the peer
  // already sent (at most 64 KiB, without waiting), so that closing does not
  // reset the connection and lose the alert OpenSSL wrote.
  void DiscardInput();

  bool handshake_done() const { return handshake_done_; }
  bool ktls_send() const { return ktls_send_; }
  const std::string& error() const { return error_; }

 private:
  int64_t Fail(int err, std::string why);  // records error_, returns -err
  void OnHandshakeDone();
  int FlushStage();  // 0 = stage empty, 1 = blocked, < 0 = error
  int SslWriteError(int ret);

  std::shared_ptr<const TlsContext> ctx_;
  ssl_st* ssl_ = nullptr;
  const int fd_;
  Session* const session_;
  Wait read_wait_ = Wait::kReadable;
  bool handshake_done_ = false;
  bool ktls_send_ = false;
  std::string error_;
  std::unique_ptr<uint8_t[]> stage_;
  size_t stage_begin_ = 0;
  size_t stage_end_ = 0;
};

// "CN=a,OU=b,O=c" (RFC 2253, most specific first, as Java's
// X500Principal.getName()) of the peer certificate of `ssl`; "" if none.
std::string PeerSubjectRfc2253(ssl_st* ssl);

}  // namespace headrace::net
