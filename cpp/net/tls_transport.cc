#include "net/tls_transport.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "net/certificate_subject.h"

namespace headrace::net {
namespace {

constexpr int64_t kMaxSendfile = int64_t{1} << 30;

}  // namespace

std::string PeerSubjectRfc2253(ssl_st* ssl) { return SubjectRfc2253(SSL_get0_peer_certificate(ssl)); }

TlsTransport::TlsTransport(std::shared_ptr<const TlsContext> ctx, int fd, Session* session)
    : ctx_(std::move(ctx)), fd_(fd), session_(session) {
  ssl_ = SSL_new(ctx_->ssl_ctx());
  if (ssl_ != nullptr) {
    SSL_set_fd(ssl_, fd_);
    SSL_set_accept_state(ssl_);
  }
}

TlsTransport::~TlsTransport() {
  if (ssl_ != nullptr) SSL_free(ssl_);  // no close_notify: the socket is going away
}

int64_t TlsTransport::Fail(int err, std::string why) {
  error_ = std::move(why);
  ERR_clear_error();
  return -err;
}

void TlsTransport::OnHandshakeDone() {
  handshake_done_ = true;
  ktls_send_ = BIO_get_ktls_send(SSL_get_wbio(ssl_)) != 0;
  // Read before any request of the connection is dispatched (session.h).
  if (session_ != nullptr && session_->protocol == SecurityProtocol::kSsl &&
      SSL_get_verify_result(ssl_) == X509_V_OK) {
    std::string subject = PeerSubjectRfc2253(ssl_);
    if (!subject.empty()) session_->principal = "User:" + subject;
  }
}

int64_t TlsTransport::Read(std::span<uint8_t> dst) {
  if (ssl_ == nullptr) return Fail(ENOMEM, "SSL_new failed");
  ERR_clear_error();
  int len = static_cast<int>(std::min<size_t>(dst.size(), INT_MAX));
  int n = SSL_read(ssl_, dst.data(), len);
  if (!handshake_done_ && SSL_is_init_finished(ssl_)) OnHandshakeDone();
  if (n > 0) return n;
  int err = SSL_get_error(ssl_, n);
  switch (err) {
    case SSL_ERROR_WANT_READ:
      read_wait_ = Wait::kReadable;
      return -EAGAIN;
    case SSL_ERROR_WANT_WRITE:
      read_wait_ = Wait::kWritable;
      return -EAGAIN;
    case SSL_ERROR_ZERO_RETURN:
      if (!handshake_done_) return Fail(EPROTO, "the peer closed during the TLS handshake");
      return 0;
    case SSL_ERROR_SYSCALL: {
      int e = errno;
      if (e == 0) {
        if (!handshake_done_) return Fail(EPROTO, "the peer closed during the TLS handshake");
        return 0;
      }
      ERR_clear_error();
      return -e;
    }
    case SSL_ERROR_SSL: {
      std::string why = TakeOpenSslError();
      long verify = SSL_get_verify_result(ssl_);
      if (verify != X509_V_OK) {
        why += std::string(" (client certificate: ") + X509_verify_cert_error_string(verify) + ")";
      }
      return Fail(EPROTO, (handshake_done_ ? "TLS: " : "TLS handshake: ") + why);
    }
    default:
      return Fail(EPROTO, "TLS: SSL_read error " + std::to_string(err));
  }
}

void TlsTransport::DiscardInput() {
  uint8_t sink[16 << 10];
  for (int i = 0; i < 4; ++i) {
    if (::recv(fd_, sink, sizeof(sink), MSG_DONTWAIT) <= 0) break;
  }
}

bool TlsTransport::HasBufferedInput() const {
  // Decrypted bytes not yet read. Not SSL_has_pending(): that also counts a
  // partly received record, which needs the socket (waiting on it is right;
  // a retry without waiting would spin). Read-ahead is off, so OpenSSL never
  // holds a complete undecrypted record beyond the one being read.
  return ssl_ != nullptr && SSL_pending(ssl_) > 0;
}

int TlsTransport::SslWriteError(int ret) {
  int err = SSL_get_error(ssl_, ret);
  switch (err) {
    case SSL_ERROR_WANT_WRITE:
      return 1;
    case SSL_ERROR_WANT_READ:  // renegotiation is off: never expected
      return static_cast<int>(Fail(EPROTO, "TLS: a write waited for a read"));
    case SSL_ERROR_SYSCALL: {
      int e = errno;
      ERR_clear_error();
      return e != 0 ? -e : -EPIPE;
    }
    default:
      return static_cast<int>(Fail(EPROTO, "TLS write: " + TakeOpenSslError()));
  }
}

int TlsTransport::FlushStage() {
  while (stage_begin_ < stage_end_) {
    ERR_clear_error();
    int n = SSL_write(ssl_, stage_.get() + stage_begin_,
                      static_cast<int>(stage_end_ - stage_begin_));
    if (n <= 0) return SslWriteError(n);  // retried later with the same bytes
    stage_begin_ += static_cast<size_t>(n);
  }
  stage_begin_ = stage_end_ = 0;
  return 0;
}

int TlsTransport::Write(TransmitQueue& out, TransmitQueue::Piece* load) {
  if (ssl_ == nullptr) return static_cast<int>(Fail(ENOMEM, "SSL_new failed"));
  for (;;) {
    if (int r = FlushStage(); r != 0) return r;
    if (out.empty()) return 0;
    TransmitQueue::Piece p = out.Next();
    if (p.kind == TransmitQueue::Kind::kLoad) {
      *load = std::move(p);
      return 2;
    }
    if (p.kind == TransmitQueue::Kind::kFile && ktls_send_) {
      ERR_clear_error();
      size_t len = static_cast<size_t>(std::min(p.file_length, kMaxSendfile));
      ossl_ssize_t n = SSL_sendfile(ssl_, p.file_fd, p.file_offset, len, 0);
      if (n > 0) {
        out.Consume(n);
        continue;
      }
      if (n == 0) return -ENODATA;
      return SslWriteError(static_cast<int>(n));
    }
    if (!stage_) stage_ = std::make_unique<uint8_t[]>(kStageBytes);
    size_t filled = 0;
    if (p.kind == TransmitQueue::Kind::kBytes) {
      const iovec* iov = out.iov();
      for (int i = 0; i < p.iovcnt && filled < kStageBytes; ++i) {
        size_t take = std::min(iov[i].iov_len, kStageBytes - filled);
        std::memcpy(stage_.get() + filled, iov[i].iov_base, take);
        filled += take;
      }
    } else {  // kFile, copy path: the range is in the page cache
      size_t want = static_cast<size_t>(std::min<int64_t>(p.file_length, kStageBytes));
      ssize_t n = ::pread(p.file_fd, stage_.get(), want, p.file_offset);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return -errno;
      if (n == 0) return -ENODATA;  // the file is shorter than the slice
      filled = static_cast<size_t>(n);
    }
    out.Consume(static_cast<int64_t>(filled));  // the stage owns these bytes now
    stage_begin_ = 0;
    stage_end_ = filled;
  }
}

}  // namespace headrace::net
