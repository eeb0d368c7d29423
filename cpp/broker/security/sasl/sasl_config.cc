#include "broker/security/sasl/sasl_config.h"

#include <algorithm>
#include <cctype>

namespace headrace::broker::sasl {
namespace {

using SaslKey = ConfigKey<SaslConfig>;

SaslKey StringKey(const char* name, const char* doc, std::string SaslConfig::*field,
                  ConfigType type = ConfigType::kString) {
  return SaslKey{name, doc,
                 [field](SaslConfig& c, const std::string& v) {
                   c.*field = v;
                   return Status::OK();
                 },
                 [field](const SaslConfig& c) { return c.*field; }, type};
}

Status CheckMechanisms(const std::string& value) {
  for (const std::string& m : SplitList(value)) {
    const auto& ok = SupportedMechanisms();
    if (std::find(ok.begin(), ok.end(), m) == ok.end())
      return Status::InvalidArgument("sasl.enabled.mechanisms: unsupported mechanism '" + m +
                                     "' (supported: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, "
                                     "OAUTHBEARER)");
  }
  return Status::OK();
}

const std::vector<SaslKey>& Keys() {
  static const std::vector<SaslKey> keys = {
      SaslKey{"sasl.enabled.mechanisms",
              "SASL mechanisms a SASL_PLAINTEXT / SASL_SSL listener offers (PLAIN, SCRAM-SHA-256, "
              "SCRAM-SHA-512, OAUTHBEARER; Kafka's GSSAPI is not supported).",
              [](SaslConfig& c, const std::string& v) -> Status {
                HR_RETURN_IF_ERROR(CheckMechanisms(v));
                c.enabled_mechanisms = v;
                return Status::OK();
              },
              [](const SaslConfig& c) { return c.enabled_mechanisms; }, ConfigType::kList},
      IntConfigKey<SaslConfig>("connections.max.reauth.ms",
                               "Longest SASL session before the client must re-authenticate "
                               "(KIP-368); 0 = sessions never expire but with their token.",
                               &SaslConfig::connections_max_reauth_ms, 0, INT64_MAX),
      StringKey("sasl.mechanism.inter.broker.protocol",
                "SASL mechanism brokers authenticate to each other with when the inter-broker "
                "listener is SASL_PLAINTEXT or SASL_SSL: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 "
                "(Kafka's default GSSAPI is not supported: set it). The credentials are the "
                "username/password of the listener's <mechanism>.sasl.jaas.config.",
                &SaslConfig::inter_broker_mechanism),
      StringKey("sasl.jaas.config",
                "JAAS login module options; PLAIN users are its user_<name>=\"<password>\" "
                "options (PlainLoginModule).",
                &SaslConfig::jaas_config, ConfigType::kPassword),
      IntConfigKey<SaslConfig>("sasl.server.max.receive.size",
                               "Largest request accepted before SASL authentication completes.",
                               &SaslConfig::server_max_receive_size, 1, INT32_MAX),
      StringKey("sasl.server.callback.handler.class",
                "Accepted for Kafka configs (e.g. OAuthBearerValidatorCallbackHandler); "
                "headrace validates OAUTHBEARER with the JWKS when one is set.",
                &SaslConfig::callback_handler_class, ConfigType::kClass),
      StringKey("sasl.oauthbearer.jwks.endpoint.url",
                "file: URL of the JWKS that signs OAUTHBEARER tokens (RS256/ES256); empty = "
                "unsecured tokens (alg none) only, for development.",
                &SaslConfig::jwks_endpoint_url),
      StringKey("sasl.oauthbearer.expected.issuer",
                "The iss claim OAUTHBEARER tokens must carry; empty = not checked.",
                &SaslConfig::expected_issuer),
      StringKey("sasl.oauthbearer.expected.audience",
                "Audiences of which a token's aud claim must name one; empty = not checked.",
                &SaslConfig::expected_audience, ConfigType::kList),
      IntConfigKey<SaslConfig>("sasl.oauthbearer.clock.skew.seconds",
                               "Tolerance for exp, nbf and iat of OAUTHBEARER tokens.",
                               &SaslConfig::clock_skew_seconds, 0, INT32_MAX),
      StringKey("sasl.oauthbearer.sub.claim.name",
                "The claim that names the principal of an OAUTHBEARER token.",
                &SaslConfig::sub_claim_name),
  };
  return keys;
}

HR_REGISTER_CONFIG_FAMILY(SaslConfig, "sasl", &Keys);

const SaslKey* FindKey(const std::string& name) {
  for (const SaslKey& k : Keys())
    if (name == k.name) return &k;
  return nullptr;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The table key a listener-prefixed key sets ("listener.name.l.plain.x" ->
// "x"), or nullptr.
const SaslKey* PrefixedKey(const std::string& key) {
  static const std::string kPrefix = "listener.name.";
  if (key.rfind(kPrefix, 0) != 0) return nullptr;
  size_t dot = key.find('.', kPrefix.size());
  if (dot == std::string::npos) return nullptr;
  std::string rest = key.substr(dot + 1);  // [<mechanism>.]<key>
  if (const SaslKey* k = FindKey(rest)) return k;
  for (const std::string& m : SupportedMechanisms()) {
    std::string mech = Lower(m) + ".";
    if (rest.rfind(mech, 0) == 0)
      if (const SaslKey* k = FindKey(rest.substr(mech.size()))) return k;
  }
  return nullptr;
}

}  // namespace

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

bool IsSaslConfigKey(const std::string& key) {
  return FindKey(key) != nullptr || PrefixedKey(key) != nullptr;
}

Status SaslConfig::Extract(std::map<std::string, std::string>& props) {
  for (auto it = props.begin(); it != props.end();) {
    const SaslKey* k = FindKey(it->first);
    if (k == nullptr) k = PrefixedKey(it->first);
    if (k == nullptr) {
      ++it;
      continue;
    }
    SaslConfig scratch;
    Status st = k->set(k == FindKey(it->first) ? *this : scratch, it->second);
    if (!st.ok()) return Status::InvalidArgument(it->first + ": " + st.message());
    given[it->first] = it->second;
    it = props.erase(it);
  }
  return Status::OK();
}

std::string SaslConfig::Lookup(const std::string& listener, const std::string& mechanism,
                               const std::string& key) const {
  const std::string prefix = "listener.name." + Lower(listener) + ".";
  if (!listener.empty() && !mechanism.empty())
    if (auto it = given.find(prefix + Lower(mechanism) + "." + key); it != given.end())
      return it->second;
  if (!listener.empty())
    if (auto it = given.find(prefix + key); it != given.end()) return it->second;
  const SaslKey* k = FindKey(key);
  return k != nullptr ? k->get(*this) : std::string();
}

}  // namespace headrace::broker::sasl
