#include "broker/security/sasl/sasl_server.h"

#include <algorithm>

#include "broker/security/sasl/jaas.h"
#include "common/logging.h"

namespace headrace::broker::sasl {
namespace {

Result<ListenerSasl> Resolve(const SaslConfig& c, const std::string& l) {
  ListenerSasl out;
  out.mechanisms = SplitList(c.Lookup(l, "", "sasl.enabled.mechanisms"));
  if (out.mechanisms.empty())
    return Status::InvalidArgument("listener " + l + ": sasl.enabled.mechanisms is empty");
  out.max_receive_size = std::stoll(c.Lookup(l, "", "sasl.server.max.receive.size"));
  const auto enabled = [&](const char* m) {
    return std::find(out.mechanisms.begin(), out.mechanisms.end(), m) != out.mechanisms.end();
  };
  for (const std::string& m : out.mechanisms)
    out.max_reauth_ms[m] = std::stoll(c.Lookup(l, m, "connections.max.reauth.ms"));
  auto users = std::make_shared<std::map<std::string, std::string>>();
  if (enabled("PLAIN")) {
    const std::string jaas = c.Lookup(l, "PLAIN", "sasl.jaas.config");
    auto modules = ParseJaasConfig(jaas);
    if (!modules.ok())
      return Status::InvalidArgument("listener " + l + ": " + modules.status().message());
    *users = PlainUsers(*modules);
    if (users->empty()) {
      HR_LOG(kWarn) << "listener " << l << ": PLAIN is enabled but its sasl.jaas.config names "
                    << "no user_<name> entries; every PLAIN login will fail";
    }
  }
  out.plain_users = std::move(users);
  if (enabled("OAUTHBEARER")) {
    JwtSettings js;
    const std::string url = c.Lookup(l, "OAUTHBEARER", "sasl.oauthbearer.jwks.endpoint.url");
    if (!url.empty()) {
      auto text = ReadJwksUrl(url);
      if (!text.ok()) return Status::InvalidArgument("listener " + l + ": " + text.status().message());
      js.jwks_json = std::move(*text);
    } else {
      HR_LOG(kWarn) << "listener " << l << ": OAUTHBEARER without "
                    << "sasl.oauthbearer.jwks.endpoint.url accepts unsecured tokens (alg none); "
                    << "for development only";
    }
    js.expected_issuer = c.Lookup(l, "OAUTHBEARER", "sasl.oauthbearer.expected.issuer");
    js.expected_audience = SplitList(c.Lookup(l, "OAUTHBEARER", "sasl.oauthbearer.expected.audience"));
    js.clock_skew_seconds = std::stoll(c.Lookup(l, "OAUTHBEARER", "sasl.oauthbearer.clock.skew.seconds"));
    js.sub_claim_name = c.Lookup(l, "OAUTHBEARER", "sasl.oauthbearer.sub.claim.name");
    auto v = JwtValidator::Create(std::move(js));
    if (!v.ok()) return Status::InvalidArgument("listener " + l + ": " + v.status().message());
    out.oauth = std::move(*v);
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<SaslServer>> SaslServer::Create(const SaslConfig& config,
                                                       const std::vector<std::string>& sasl_listeners) {
  std::unique_ptr<SaslServer> s(new SaslServer());
  for (const std::string& l : sasl_listeners) {
    HR_ASSIGN_OR_RETURN(ListenerSasl ls, Resolve(config, l));
    s->listeners_[l] = std::move(ls);
  }
  return s;
}

const ListenerSasl* SaslServer::ForListener(const std::string& listener) const {
  auto it = listeners_.find(listener);
  return it == listeners_.end() ? nullptr : &it->second;
}

std::shared_ptr<MechanismExchange> SaslServer::Start(const std::string& listener,
                                                     const std::string& mechanism) const {
  const ListenerSasl* l = ForListener(listener);
  if (l == nullptr ||
      std::find(l->mechanisms.begin(), l->mechanisms.end(), mechanism) == l->mechanisms.end())
    return nullptr;
  if (mechanism == "PLAIN") return NewPlainExchange(l->plain_users);
  if (ScramMechanism m = ScramMechanismFromName(mechanism);
      m != ScramMechanism::kUnknown && store_ != nullptr)
    return NewScramExchange(m, store_);
  if (mechanism == "OAUTHBEARER" && l->oauth) return NewOAuthBearerExchange(l->oauth);
  return nullptr;
}

}  // namespace headrace::broker::sasl
