#include "broker/replication/inter_broker_security.h"

#include <algorithm>
#include <cctype>

#include "broker/config/broker_config.h"
#include "broker/config/listener.h"
#include "broker/security/sasl/jaas.h"
#include "broker/security/sasl/sasl_client.h"
#include "broker/security/sasl/sasl_config.h"
#include "broker/config/ssl_config.h"

namespace headrace::broker::replication {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::string InterBrokerSecurity::Describe() const {
  std::string out = SecurityProtocolName(protocol);
  std::string detail;
  if (uses_sasl()) detail = sasl_mechanism + " as " + sasl_username;
  if (uses_tls()) {
    detail += std::string(detail.empty() ? "" : "; ") + "TLS, host names " +
              (tls->verify_hostname() ? "verified" : "not verified");
  }
  return detail.empty() ? out : out + " (" + detail + ")";
}

Result<std::shared_ptr<const InterBrokerSecurity>> InterBrokerSecurity::Build(
    const BrokerConfig& config, const SslConfig& ssl, const sasl::SaslConfig& sasl) {
  auto out = std::make_shared<InterBrokerSecurity>();
  out->listener = config.inter_broker_listener();
  for (const Listener& l : config.listeners) {
    if (l.name == out->listener) out->protocol = config.protocol_of(l);
  }
  const std::string where = "inter-broker listener " + out->listener;
  const bool tls = out->protocol == net::SecurityProtocol::kSsl ||
                   out->protocol == net::SecurityProtocol::kSaslSsl;
  const bool sasl_on = out->protocol == net::SecurityProtocol::kSaslPlaintext ||
                       out->protocol == net::SecurityProtocol::kSaslSsl;
  if (tls) {
    HR_ASSIGN_OR_RETURN(net::TlsSettings settings, ssl.TlsSettingsFor(out->listener));
    settings.what = where + " (client side)";
    HR_ASSIGN_OR_RETURN(out->tls, net::TlsContext::CreateClient(settings));
  }
  if (sasl_on) {
    const std::string mech = sasl.inter_broker_mechanism;
    const std::string key = "sasl.mechanism.inter.broker.protocol";
    if (mech == "GSSAPI") {
      return Status::InvalidArgument(
          key + ": GSSAPI (Kafka's default) is not supported; " + where + " is " +
          SecurityProtocolName(out->protocol) + ": set PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512");
    }
    if (!sasl::HasClientMechanism(mech)) {
      return Status::InvalidArgument(key + ": " + mech +
                                     " cannot be used between brokers (PLAIN, SCRAM-SHA-256, "
                                     "SCRAM-SHA-512)");
    }
    std::vector<std::string> enabled =
        sasl::SplitList(sasl.Lookup(out->listener, "", "sasl.enabled.mechanisms"));
    if (std::find(enabled.begin(), enabled.end(), mech) == enabled.end()) {
      return Status::InvalidArgument(key + ": " + mech + " is not in " + where +
                                     "'s sasl.enabled.mechanisms");
    }
    const std::string jaas = sasl.Lookup(out->listener, mech, "sasl.jaas.config");
    const std::string jaas_key =
        "listener.name." + Lower(out->listener) + "." + Lower(mech) + ".sasl.jaas.config";
    if (jaas.empty()) {
      return Status::InvalidArgument(jaas_key + ": needed for the inter-broker credentials (" +
                                     mech + " login module with username and password)");
    }
    auto modules = sasl::ParseJaasConfig(jaas);
    if (!modules.ok()) return Status::InvalidArgument(jaas_key + ": " + modules.status().message());
    auto login = sasl::LoginCredentials(*modules);
    if (!login.ok()) return Status::InvalidArgument(jaas_key + ": " + login.status().message());
    out->sasl_mechanism = mech;
    out->sasl_username = login->username;
    out->sasl_password = login->password;
  }
  return std::shared_ptr<const InterBrokerSecurity>(std::move(out));
}

}  // namespace headrace::broker::replication
