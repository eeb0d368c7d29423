#include "net/tls_client_stream.h"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <cerrno>
#include <cstring>

namespace headrace::net {
namespace {

bool IsIpAddress(const std::string& host) {
  unsigned char buf[16];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

// Why an SSL call that returned `rc` failed, as one line.
std::string Failure(SSL* ssl, int rc, bool* timed_out, bool* closed) {
  const int saved_errno = errno;
  const int err = SSL_get_error(ssl, rc);
  if (err == SSL_ERROR_ZERO_RETURN) {
    if (closed != nullptr) *closed = true;
    return "the peer closed the TLS connection";
  }
  if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE ||
      (err == SSL_ERROR_SYSCALL && (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK))) {
    ERR_clear_error();
    if (timed_out != nullptr) *timed_out = true;
    return "timed out";
  }
  if (err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) {
    if (saved_errno == 0) {
      if (closed != nullptr) *closed = true;
      return "the peer closed the connection";
    }
    return std::strerror(saved_errno);
  }
  return TakeOpenSslError();
}

// OpenSSL's socket BIO, writing with send(MSG_NOSIGNAL): a peer that
// closed (or a socket shut down by Interrupt) must fail the write, not
// raise SIGPIPE in a process that does not ignore it (the C++ tests, an
// embedding application). Reads, control and lifetime are BIO_s_socket's.
int SendNoSignal(BIO* b, const char* data, int len) {
  int fd = -1;
  BIO_get_fd(b, &fd);
  errno = 0;
  const int n = static_cast<int>(::send(fd, data, static_cast<size_t>(len), MSG_NOSIGNAL));
  BIO_clear_retry_flags(b);
  if (n <= 0 && BIO_sock_should_retry(n)) BIO_set_retry_write(b);
  return n;
}

BIO_METHOD* NoSignalSocketMethod() {
  static BIO_METHOD* const method = [] {
    const BIO_METHOD* sock = BIO_s_socket();
    BIO_METHOD* m = BIO_meth_new(BIO_TYPE_SOCKET, "headrace socket (MSG_NOSIGNAL)");
    BIO_meth_set_write(m, SendNoSignal);
    BIO_meth_set_read(m, BIO_meth_get_read(sock));
    BIO_meth_set_puts(m, BIO_meth_get_puts(sock));
    BIO_meth_set_ctrl(m, BIO_meth_get_ctrl(sock));
    BIO_meth_set_create(m, BIO_meth_get_create(sock));
    BIO_meth_set_destroy(m, BIO_meth_get_destroy(sock));
    return m;
  }();
  return method;
}

}  // namespace

Result<std::unique_ptr<TlsClientStream>> TlsClientStream::Handshake(std::shared_ptr<TlsContext> ctx,
                                                                   int fd, const std::string& host) {
  ERR_clear_error();
  SSL* ssl = SSL_new(ctx->ssl_ctx());
  if (ssl == nullptr) return Status::IOError("TLS: SSL_new: " + TakeOpenSslError());
  std::unique_ptr<TlsClientStream> out(new TlsClientStream(ctx, ssl));
  const bool ip = IsIpAddress(host);
  if (!ip && !host.empty()) SSL_set_tlsext_host_name(ssl, host.c_str());
  if (ctx->verify_hostname()) {
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    int ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str())
                : X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size());
    if (ok != 1) return Status::IOError("TLS: cannot verify host " + host + ": " + TakeOpenSslError());
  }
  BIO* bio = BIO_new(NoSignalSocketMethod());
  if (bio == nullptr) return Status::IOError("TLS: BIO_new: " + TakeOpenSslError());
  BIO_set_fd(bio, fd, BIO_NOCLOSE);
  SSL_set_bio(ssl, bio, bio);  // the SSL owns it now
  int rc = SSL_connect(ssl);
  if (rc != 1) {
    std::string why;
    const long verify = SSL_get_verify_result(ssl);
    if (verify != X509_V_OK) {
      why = std::string("server certificate not accepted: ") +
            X509_verify_cert_error_string(verify);
      ERR_clear_error();
    } else {
      bool timed_out = false;
      why = Failure(ssl, rc, &timed_out, nullptr);
      if (timed_out) why = "handshake timed out";
    }
    return Status::IOError("TLS handshake with " + host + " failed: " + why);
  }
  return out;
}

TlsClientStream::~TlsClientStream() {
  // No close_notify: the caller closes or shuts the socket down.
  SSL_free(ssl_);
}

Status TlsClientStream::WriteAll(const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    size_t written = 0;
    int rc = SSL_write_ex(ssl_, p, n, &written);
    if (rc != 1) return Status::IOError("TLS write: " + Failure(ssl_, rc, nullptr, nullptr));
    p += written;
    n -= written;
  }
  return Status::OK();
}

Status TlsClientStream::ReadAll(void* data, size_t n, bool* timed_out, bool* closed) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    size_t got = 0;
    int rc = SSL_read_ex(ssl_, p, n, &got);
    if (rc != 1) return Status::IOError("TLS read: " + Failure(ssl_, rc, timed_out, closed));
    p += got;
    n -= got;
  }
  return Status::OK();
}

std::string TlsClientStream::version() const { return SSL_get_version(ssl_); }

}  // namespace headrace::net
