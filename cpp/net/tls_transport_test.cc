// TlsTransport against an in-process OpenSSL client over a socketpair: the
// non-blocking handshake, the principal from a client certificate, replies
// with byte and file pieces (the copy path: this kernel has no kTLS), and a
// malformed record failing with one error instead of a hang.
#include "net/tls_transport.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/output_buffer.h"
#include "net/certificate_subject.h"

namespace headrace::net {
namespace {

struct KeyCert {
  EVP_PKEY* key = nullptr;
  X509* cert = nullptr;
  ~KeyCert() {
    EVP_PKEY_free(key);
    X509_free(cert);
  }
  std::string KeyPem() const {
    BIO* b = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(b, key, nullptr, nullptr, 0, nullptr, nullptr);
    return Drain(b);
  }
  std::string CertPem() const {
    BIO* b = BIO_new(BIO_s_mem());
    PEM_write_bio_X509(b, cert);
    return Drain(b);
  }
  static std::string Drain(BIO* b) {
    char* data = nullptr;
    long n = BIO_get_mem_data(b, &data);
    std::string out(data, static_cast<size_t>(n));
    BIO_free(b);
    return out;
  }
};

// A P-256 key and a certificate for `subject` ({field, value} pairs, most
// general first) signed by `issuer` (null: self-signed).
void Make(KeyCert* out, std::vector<std::pair<const char*, const char*>> subject,
          const KeyCert* issuer) {
  out->key = EVP_EC_gen("P-256");
  out->cert = X509_new();
  X509_set_version(out->cert, 2);
  static long serial = 1;
  ASN1_INTEGER_set(X509_get_serialNumber(out->cert), serial++);
  X509_gmtime_adj(X509_getm_notBefore(out->cert), -60);
  X509_gmtime_adj(X509_getm_notAfter(out->cert), 3600);
  X509_set_pubkey(out->cert, out->key);
  X509_NAME* name = X509_get_subject_name(out->cert);
  for (auto [field, value] : subject) {
    X509_NAME_add_entry_by_txt(name, field, MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(value), -1, -1, 0);
  }
  X509_set_issuer_name(out->cert, issuer ? X509_get_subject_name(issuer->cert) : name);
  if (issuer == nullptr) {  // a CA
    X509_EXTENSION* ext =
        X509V3_EXT_conf_nid(nullptr, nullptr, NID_basic_constraints, "critical,CA:TRUE");
    X509_add_ext(out->cert, ext, -1);
    X509_EXTENSION_free(ext);
  }
  X509_sign(out->cert, issuer ? issuer->key : out->key, EVP_sha256());
}

class TlsTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Make(&ca_, {{"CN", "test-ca"}}, nullptr);
    Make(&server_, {{"CN", "localhost"}}, &ca_);
    Make(&client_, {{"O", "headrace"}, {"OU", "eng"}, {"CN", "client"}}, &ca_);
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds_), 0);
    int flags = fcntl(fds_[0], F_GETFL);
    fcntl(fds_[0], F_SETFL, flags | O_NONBLOCK);
  }
  void TearDown() override {
    if (fds_[0] >= 0) ::close(fds_[0]);
    if (fds_[1] >= 0) ::close(fds_[1]);
  }

  std::shared_ptr<TlsContext> Server(ClientAuth auth) {
    TlsSettings s;
    s.key_pem = server_.KeyPem();
    s.cert_chain_pem = server_.CertPem();
    s.trust_pem = ca_.CertPem();
    s.client_auth = auth;
    auto ctx = TlsContext::Create(s);
    EXPECT_TRUE(ctx.ok()) << ctx.status().ToString();
    return ctx.ok() ? *ctx : nullptr;
  }

  // The client end (blocking) on its own thread: handshake with the client
  // certificate, send `request`, read `expect_reply` bytes into *reply.
  std::thread Client(std::string request, size_t expect_reply, std::string* reply) {
    return std::thread([this, request, expect_reply, reply] {
      SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
      SSL_CTX_use_certificate(ctx, client_.cert);
      SSL_CTX_use_PrivateKey(ctx, client_.key);
      X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), ca_.cert);
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
      SSL* ssl = SSL_new(ctx);
      SSL_set_fd(ssl, fds_[1]);
      if (SSL_connect(ssl) == 1 && SSL_write(ssl, request.data(), int(request.size())) > 0) {
        std::string got(expect_reply, '\0');
        size_t n = 0;
        while (n < expect_reply) {
          int r = SSL_read(ssl, got.data() + n, int(expect_reply - n));
          if (r <= 0) break;
          n += size_t(r);
        }
        got.resize(n);
        *reply = got;
      }
      SSL_free(ssl);
      SSL_CTX_free(ctx);
      ::shutdown(fds_[1], SHUT_WR);
    });
  }

  // Drives Read() as an event loop would until it returns something other
  // than -EAGAIN (or 10 s pass).
  int64_t ReadWhenReady(TlsTransport& t, std::span<uint8_t> dst) {
    for (int i = 0; i < 1000; ++i) {
      int64_t n = t.Read(dst);
      if (n != -EAGAIN) return n;
      pollfd p{fds_[0], short(t.read_wait() == TlsTransport::Wait::kWritable ? POLLOUT : POLLIN), 0};
      ::poll(&p, 1, 10);
    }
    return -ETIMEDOUT;
  }

  int WriteAll(TlsTransport& t, TransmitQueue& q) {
    for (int i = 0; i < 1000; ++i) {
      TransmitQueue::Piece load;
      int r = t.Write(q, &load);
      if (r == 2) {
        q.MarkLoaded();
        continue;
      }
      if (r != 1) return r;
      pollfd p{fds_[0], POLLOUT, 0};
      ::poll(&p, 1, 10);
    }
    return -ETIMEDOUT;
  }

  KeyCert ca_, server_, client_;
  int fds_[2] = {-1, -1};
};

TEST_F(TlsTransportTest, MutualTlsNamesThePrincipalAndCarriesBytesAndFileSlices) {
  auto ctx = Server(ClientAuth::kRequired);
  ASSERT_NE(ctx, nullptr);
  EXPECT_FALSE(ctx->ktls_enabled() && !KernelTlsAvailable());
  Session session;
  session.protocol = SecurityProtocol::kSsl;
  TlsTransport t(ctx, fds_[0], &session);

  // A reply: 4-byte prefix + "hello " + a 100 KiB file slice (copy path).
  char path[] = "/tmp/tls_transport_testXXXXXX";
  int file = mkstemp(path);
  ASSERT_GE(file, 0);
  unlink(path);
  std::string content(100 << 10, '\0');
  for (size_t i = 0; i < content.size(); ++i) content[i] = char('a' + i % 26);
  ASSERT_EQ(::write(file, content.data(), content.size()), ssize_t(content.size()));

  std::string reply;
  std::thread client = Client("request", 4 + 6 + content.size(), &reply);
  uint8_t buf[64];
  int64_t n = ReadWhenReady(t, buf);
  EXPECT_EQ(n, 7) << t.error();
  if (n != 7) {
    ::shutdown(fds_[0], SHUT_RDWR);
    client.join();
    return;
  }
  EXPECT_EQ(std::string(reinterpret_cast<char*>(buf), 7), "request");
  EXPECT_TRUE(t.handshake_done());
  EXPECT_EQ(session.principal, "User:CN=client,OU=eng,O=headrace");

  TransmitQueue q;
  OutputBuffer body;
  body.Append("hello ", 6);
  body.AppendSlice(FileSlice{file, FilePosition(0), int64_t(content.size()), nullptr});
  q.Push(std::move(body));
  EXPECT_EQ(WriteAll(t, q), 0) << t.error();
  EXPECT_TRUE(q.empty());
  client.join();
  ::close(file);
  ASSERT_EQ(reply.size(), 4 + 6 + content.size());
  EXPECT_EQ(reply.substr(4, 6), "hello ");
  EXPECT_TRUE(reply.substr(10) == content);
  EXPECT_EQ(ReadWhenReady(t, buf), 0);  // the client closed
}

// The console names a browser's certificate as the listener names a client's.
TEST_F(TlsTransportTest, CertificateSubjectOfDerIsTheListenersPrincipalName) {
  unsigned char* der = nullptr;
  int len = i2d_X509(client_.cert, &der);
  ASSERT_GT(len, 0);
  std::string bytes(reinterpret_cast<char*>(der), static_cast<size_t>(len));
  OPENSSL_free(der);
  EXPECT_EQ(CertificateSubjectRfc2253(bytes), "CN=client,OU=eng,O=headrace");
  EXPECT_EQ(CertificateSubjectRfc2253(bytes.substr(0, bytes.size() / 2)), "");
  EXPECT_EQ(CertificateSubjectRfc2253("not a certificate"), "");
  EXPECT_EQ(CertificateSubjectRfc2253(""), "");
}

TEST_F(TlsTransportTest, SslWithoutClientAuthStaysAnonymous) {
  auto ctx = Server(ClientAuth::kNone);
  Session session;
  session.protocol = SecurityProtocol::kSsl;
  TlsTransport t(ctx, fds_[0], &session);
  std::string reply;
  std::thread client = Client("x", 0, &reply);
  uint8_t buf[8];
  int64_t n = ReadWhenReady(t, buf);
  if (n != 1) ::shutdown(fds_[0], SHUT_RDWR);
  client.join();
  EXPECT_EQ(n, 1) << t.error();
  EXPECT_EQ(session.principal, "User:ANONYMOUS");
}

TEST_F(TlsTransportTest, PlaintextAndGarbageFailWithOneError) {
  auto ctx = Server(ClientAuth::kNone);
  Session session;
  TlsTransport t(ctx, fds_[0], &session);
  const char kafka_request[] = "\0\0\0\x0c\0\x12\0\0\0\0\0\x01\0\x00xx";
  ASSERT_GT(::write(fds_[1], kafka_request, sizeof(kafka_request)), 0);
  uint8_t buf[64];
  EXPECT_EQ(ReadWhenReady(t, buf), -EPROTO);
  EXPECT_NE(t.error().find("TLS handshake"), std::string::npos) << t.error();
}

TEST_F(TlsTransportTest, TruncatedHandshakeIsAnErrorNotAHang) {
  auto ctx = Server(ClientAuth::kNone);
  Session session;
  TlsTransport t(ctx, fds_[0], &session);
  const unsigned char partial[] = {0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00};
  ASSERT_GT(::write(fds_[1], partial, sizeof(partial)), 0);
  ::shutdown(fds_[1], SHUT_WR);
  uint8_t buf[64];
  EXPECT_EQ(ReadWhenReady(t, buf), -EPROTO);
  EXPECT_FALSE(t.error().empty());
}

TEST_F(TlsTransportTest, ProtocolsCiphersAndAnEncryptedKey) {
  TlsSettings s;
  BIO* b = BIO_new(BIO_s_mem());
  PEM_write_bio_PKCS8PrivateKey(b, server_.key, EVP_aes_256_cbc(), nullptr, 0, nullptr,
                                const_cast<char*>("secret"));
  s.key_pem = KeyCert::Drain(b);
  s.cert_chain_pem = server_.CertPem();
  EXPECT_FALSE(TlsContext::Create(s).ok());  // no ssl.key.password
  s.key_password = "secret";
  s.protocols = {"TLSv1.3"};
  // IANA names (as Kafka takes them) of a TLS 1.3 and a TLS 1.2 suite.
  s.cipher_suites = {"TLS_AES_128_GCM_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"};
  auto ctx = TlsContext::Create(s);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  s.cipher_suites = {"TLS_NO_SUCH_SUITE"};
  EXPECT_NE(TlsContext::Create(s).status().message().find("unknown cipher suite TLS_NO_SUCH_SUITE"),
            std::string::npos);

  // A TLS 1.2-only client against a TLS 1.3-only listener: refused.
  Session session;
  TlsTransport t(*ctx, fds_[0], &session);
  std::thread client([this] {
    SSL_CTX* cctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_max_proto_version(cctx, TLS1_2_VERSION);
    SSL* ssl = SSL_new(cctx);
    SSL_set_fd(ssl, fds_[1]);
    EXPECT_NE(SSL_connect(ssl), 1);
    SSL_free(ssl);
    SSL_CTX_free(cctx);
    ::shutdown(fds_[1], SHUT_RDWR);
  });
  uint8_t buf[16];
  EXPECT_EQ(ReadWhenReady(t, buf), -EPROTO);
  client.join();
  EXPECT_NE(t.error().find("unsupported protocol"), std::string::npos) << t.error();
}

TEST(TlsContextTest, BadSettingsAreOneLineErrors) {
  TlsSettings s;
  s.what = "listener SSL";
  auto r = TlsContext::Create(s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind("listener SSL: a TLS listener needs", 0), 0u)
      << r.status().message();
  s.key_pem = "not a key";
  s.cert_chain_pem = "not a cert";
  r = TlsContext::Create(s);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cannot read the private key"), std::string::npos);
  s.protocols = {"TLSv1.1"};
  r = TlsContext::Create(s);
  EXPECT_NE(r.status().message().find("TLSv1.1 is not supported"), std::string::npos);
}

}  // namespace
}  // namespace headrace::net
