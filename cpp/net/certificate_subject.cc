#include "net/certificate_subject.h"

#include <openssl/bio.h>
#include <openssl/x509.h>

namespace headrace::net {

std::string SubjectRfc2253(X509* cert) {
  if (cert == nullptr) return "";
  BIO* mem = BIO_new(BIO_s_mem());
  if (mem == nullptr) return "";
  // UTF-8 as is (Java's X500Principal.getName() does not escape it).
  X509_NAME_print_ex(mem, X509_get_subject_name(cert), 0, XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB);
  char* data = nullptr;
  long len = BIO_get_mem_data(mem, &data);
  std::string out(data != nullptr && len > 0 ? std::string(data, static_cast<size_t>(len)) : "");
  BIO_free(mem);
  return out;
}

std::string CertificateSubjectRfc2253(std::string_view der) {
  const auto* p = reinterpret_cast<const unsigned char*>(der.data());
  X509* cert = d2i_X509(nullptr, &p, static_cast<long>(der.size()));
  std::string out = SubjectRfc2253(cert);
  X509_free(cert);
  return out;
}

}  // namespace headrace::net
