#include "net/tls_context.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#ifndef TCP_ULP
#define TCP_ULP 31
#endif

namespace headrace::net {
namespace {

struct BioDeleter {
  void operator()(BIO* b) const { BIO_free(b); }
};
using BioPtr = std::unique_ptr<BIO, BioDeleter>;

BioPtr MemBio(const std::string& pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

Status Bad(const TlsSettings& s, const std::string& what) {
  return Status::InvalidArgument(s.what + ": " + what);
}

int ProtocolVersion(const std::string& name) {
  if (name == "TLSv1.2") return TLS1_2_VERSION;
  if (name == "TLSv1.3") return TLS1_3_VERSION;
  return 0;
}

Status LoadKeyAndChain(SSL_CTX* ctx, const TlsSettings& s) {
  if (s.cert_chain_pem.empty() || s.key_pem.empty()) {
    return Bad(s, "a TLS listener needs a private key and a certificate chain "
                  "(ssl.keystore.location, or ssl.keystore.key and "
                  "ssl.keystore.certificate.chain, with ssl.keystore.type=PEM)");
  }
  BioPtr kb = MemBio(s.key_pem);
  EVP_PKEY* key = PEM_read_bio_PrivateKey(
      kb.get(), nullptr, nullptr,
      const_cast<void*>(static_cast<const void*>(s.key_password.c_str())));
  if (key == nullptr) {
    return Bad(s, "cannot read the private key (wrong ssl.key.password?): " + TakeOpenSslError());
  }
  BioPtr cb = MemBio(s.cert_chain_pem);
  X509* leaf = PEM_read_bio_X509(cb.get(), nullptr, nullptr, nullptr);
  if (leaf == nullptr) {
    EVP_PKEY_free(key);
    return Bad(s, "no certificate in the certificate chain: " + TakeOpenSslError());
  }
  int ok = SSL_CTX_use_certificate(ctx, leaf);
  X509_free(leaf);
  if (ok == 1) ok = SSL_CTX_use_PrivateKey(ctx, key);
  EVP_PKEY_free(key);
  if (ok != 1) return Bad(s, "key or certificate refused: " + TakeOpenSslError());
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return Bad(s, "the private key does not match the certificate: " + TakeOpenSslError());
  }
  while (X509* extra = PEM_read_bio_X509(cb.get(), nullptr, nullptr, nullptr)) {
    if (SSL_CTX_add0_chain_cert(ctx, extra) != 1) {  // takes ownership on success
      X509_free(extra);
      return Bad(s, "certificate chain refused: " + TakeOpenSslError());
    }
  }
  ERR_clear_error();  // the end of the PEM input
  return Status::OK();
}

Status LoadTrust(SSL_CTX* ctx, const TlsSettings& s) {
  if (s.trust_pem.empty()) return Status::OK();
  BioPtr b = MemBio(s.trust_pem);
  X509_STORE* store = SSL_CTX_get_cert_store(ctx);
  int n = 0;
  while (X509* ca = PEM_read_bio_X509(b.get(), nullptr, nullptr, nullptr)) {
    X509_STORE_add_cert(store, ca);
    SSL_CTX_add_client_CA(ctx, ca);  // named in the CertificateRequest
    X509_free(ca);
    ++n;
  }
  ERR_clear_error();
  if (n == 0) return Bad(s, "no certificate in the truststore");
  return Status::OK();
}

Status SetProtocols(SSL_CTX* ctx, const TlsSettings& s) {
  int lo = 0, hi = 0;
  for (const std::string& p : s.protocols) {
    int v = ProtocolVersion(p);
    if (v == 0) {
      return Bad(s, "ssl.enabled.protocols: " + p + " is not supported (TLSv1.2, TLSv1.3)");
    }
    lo = lo == 0 || v < lo ? v : lo;
    hi = v > hi ? v : hi;
  }
  if (lo == 0) return Bad(s, "ssl.enabled.protocols: empty");
  SSL_CTX_set_min_proto_version(ctx, lo);
  SSL_CTX_set_max_proto_version(ctx, hi);
  return Status::OK();
}

// TLS 1.3 suites go to SSL_CTX_set_ciphersuites, the others (IANA names
// translated to OpenSSL's) to SSL_CTX_set_cipher_list.
Status SetCiphers(SSL_CTX* ctx, const TlsSettings& s) {
  if (s.cipher_suites.empty()) return Status::OK();
  std::string tls13, tls12;
  STACK_OF(SSL_CIPHER)* all = SSL_CTX_get_ciphers(ctx);
  for (const std::string& name : s.cipher_suites) {
    std::string openssl_name;
    bool is13 = false;
    for (int i = 0; i < sk_SSL_CIPHER_num(all); ++i) {
      const SSL_CIPHER* c = sk_SSL_CIPHER_value(all, i);
      const char* std_name = SSL_CIPHER_standard_name(c);
      if (name == SSL_CIPHER_get_name(c) || (std_name != nullptr && name == std_name)) {
        openssl_name = SSL_CIPHER_get_name(c);
        is13 = std::strcmp(SSL_CIPHER_get_version(c), "TLSv1.3") == 0;
        break;
      }
    }
    if (openssl_name.empty()) return Bad(s, "ssl.cipher.suites: unknown cipher suite " + name);
    std::string& list = is13 ? tls13 : tls12;
    list += (list.empty() ? "" : ":") + openssl_name;
  }
  // A list without suites of one version disables that version's suites.
  if (SSL_CTX_set_ciphersuites(ctx, tls13.c_str()) != 1 ||
      (!tls12.empty() && SSL_CTX_set_cipher_list(ctx, tls12.c_str()) != 1)) {
    return Bad(s, "ssl.cipher.suites refused: " + TakeOpenSslError());
  }
  if (tls12.empty()) SSL_CTX_set_cipher_list(ctx, "");  // TLS 1.2: nothing
  ERR_clear_error();
  return Status::OK();
}

bool ProbeKernelTls(std::string* why) {
  int srv = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int cli = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int acc = -1;
  bool ok = false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (srv >= 0 && cli >= 0 && ::bind(srv, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      ::listen(srv, 1) == 0 && ::getsockname(srv, reinterpret_cast<sockaddr*>(&a), &len) == 0 &&
      ::connect(cli, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      (acc = ::accept4(srv, nullptr, nullptr, SOCK_CLOEXEC)) >= 0) {
    ok = ::setsockopt(acc, SOL_TCP, TCP_ULP, "tls", sizeof("tls")) == 0;
    if (!ok) *why = std::string("the kernel has no TLS offload: TCP_ULP tls: ") + std::strerror(errno);
  } else {
    *why = std::string("probe failed: ") + std::strerror(errno);
  }
  for (int fd : {srv, cli, acc}) {
    if (fd >= 0) ::close(fd);
  }
  return ok;
}

}  // namespace

std::string TakeOpenSslError() {
  unsigned long e = ERR_get_error();
  std::string out;
  while (e != 0) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    out = buf;  // the last (outermost) reason
    e = ERR_get_error();
  }
  return out.empty() ? "unknown OpenSSL error" : out;
}

bool KernelTlsAvailable(std::string* why) {
  static std::string reason;
  static const bool available = ProbeKernelTls(&reason);
  if (why != nullptr) *why = reason;
  return available;
}

Result<std::shared_ptr<TlsContext>> TlsContext::Create(const TlsSettings& s) {
  std::shared_ptr<TlsContext> out(new TlsContext());
  ERR_clear_error();
  out->ctx_ = SSL_CTX_new(TLS_server_method());
  if (out->ctx_ == nullptr) return Bad(s, "SSL_CTX_new: " + TakeOpenSslError());
  SSL_CTX* ctx = out->ctx_;
  HR_RETURN_IF_ERROR(SetProtocols(ctx, s));
  HR_RETURN_IF_ERROR(SetCiphers(ctx, s));
  HR_RETURN_IF_ERROR(LoadKeyAndChain(ctx, s));
  HR_RETURN_IF_ERROR(LoadTrust(ctx, s));
  out->client_auth_ = s.client_auth;
  if (s.client_auth != ClientAuth::kNone) {
    int mode = SSL_VERIFY_PEER;
    if (s.client_auth == ClientAuth::kRequired) mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    SSL_CTX_set_verify(ctx, mode, nullptr);
  }
  // Renegotiation would let a write wait for a read (the transport never
  // does that); an EOF is the peer closing, not an error of its own.
  uint64_t opts = SSL_OP_NO_RENEGOTIATION | SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_COMPRESSION;
  std::string why;
  out->ktls_ = s.try_ktls && KernelTlsAvailable(&why);
  if (out->ktls_) opts |= SSL_OP_ENABLE_KTLS;
  SSL_CTX_set_options(ctx, opts);
  // SSL_write may report records as they are written; its buffer is the
  // transport's own stable staging buffer.
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_RELEASE_BUFFERS);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
  static const unsigned char kSessionIdContext[] = "headrace";
  SSL_CTX_set_session_id_context(ctx, kSessionIdContext, sizeof(kSessionIdContext) - 1);
  out->send_path_ = out->ktls_ ? "kTLS"
                    : s.try_ktls ? "OpenSSL copy (" + why + ")"
                                 : "OpenSSL copy (kTLS not requested)";
  return out;
}

Result<std::shared_ptr<TlsContext>> TlsContext::CreateClient(const TlsSettings& s) {
  std::shared_ptr<TlsContext> out(new TlsContext());
  ERR_clear_error();
  out->ctx_ = SSL_CTX_new(TLS_client_method());
  if (out->ctx_ == nullptr) return Bad(s, "SSL_CTX_new: " + TakeOpenSslError());
  SSL_CTX* ctx = out->ctx_;
  HR_RETURN_IF_ERROR(SetProtocols(ctx, s));
  HR_RETURN_IF_ERROR(SetCiphers(ctx, s));
  // The client certificate is optional: a listener without mutual TLS
  // never asks for it.
  if (!s.cert_chain_pem.empty() || !s.key_pem.empty()) HR_RETURN_IF_ERROR(LoadKeyAndChain(ctx, s));
  if (s.trust_pem.empty()) {
    if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
      return Bad(s, "no truststore and no system CA certificates: " + TakeOpenSslError());
    }
  } else {
    HR_RETURN_IF_ERROR(LoadTrust(ctx, s));
  }
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);  // the server is always verified
  // An EOF is the peer closing (reported as such), not an OpenSSL error.
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
                               SSL_OP_IGNORE_UNEXPECTED_EOF);
  // Blocking streams: SSL_write returns only when everything is written.
  SSL_CTX_set_mode(ctx, SSL_MODE_AUTO_RETRY);
  out->verify_hostname_ = s.verify_hostname;
  out->send_path_ = "OpenSSL copy (client)";
  return out;
}

TlsContext::~TlsContext() {
  if (ctx_ != nullptr) SSL_CTX_free(ctx_);
}

}  // namespace headrace::net
