// The subject of an X.509 certificate as a principal name: "CN=a,OU=b,O=c"
// (RFC 2253, most specific first, as Java's X500Principal.getName()), the
// name an SSL listener gives a client (TlsTransport) and the web console a
// browser's client certificate (Broker::CertificatePrincipal), one format.
#pragma once

#include <string>
#include <string_view>

struct x509_st;

namespace headrace::net {

// "" when `cert` is null.
std::string SubjectRfc2253(x509_st* cert);
// The same for a DER-encoded certificate; "" if `der` is not one.
std::string CertificateSubjectRfc2253(std::string_view der);

}  // namespace headrace::net
