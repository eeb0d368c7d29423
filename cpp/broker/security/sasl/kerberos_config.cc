#include "broker/security/sasl/kerberos_config.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace headrace::broker::sasl {
namespace {

using KerberosKey = ConfigKey<KerberosConfig>;

// Every doc line ends with this: the keys are accepted, never used.
#define HR_NO_GSSAPI " Accepted for Kafka compatibility, no effect: headrace has no GSSAPI."

// A key stored as given after `check` accepted it; per-broker like Kafka's.
KerberosKey Key(const char* name, const char* doc, std::string KerberosConfig::*field,
                ConfigType type, Status (*check)(const char*, const std::string&)) {
  return KerberosKey{name, doc,
                     [=](KerberosConfig& c, const std::string& v) -> Status {
                       HR_RETURN_IF_ERROR(check(name, v));
                       c.*field = v;
                       return Status::OK();
                     },
                     [field](const KerberosConfig& c) { return c.*field; }, type,
                     UpdateMode::kPerBroker};
}

Status AnyValue(const char*, const std::string&) { return Status::OK(); }

Status LongValue(const char* name, const std::string& v) {
  return ParseIntSetting(name, v, INT64_MIN, INT64_MAX).status();
}

Status DoubleValue(const char* name, const std::string& v) {
  errno = 0;
  char* end = nullptr;
  const double d = std::strtod(v.c_str(), &end);
  if (v.empty() || end != v.c_str() + v.size() || errno != 0 || !std::isfinite(d)) {
    return Status::InvalidArgument(std::string(name) + ": expected a number, got '" + v + "'");
  }
  return Status::OK();
}

const std::vector<KerberosKey>& Keys() {
  static const std::vector<KerberosKey> keys = {
      Key("sasl.kerberos.service.name",
          "The Kerberos principal name that Kafka runs as (Kafka's GSSAPI)." HR_NO_GSSAPI,
          &KerberosConfig::service_name, ConfigType::kString, &AnyValue),
      Key("sasl.kerberos.kinit.cmd", "Kerberos kinit command path (Kafka's GSSAPI)." HR_NO_GSSAPI,
          &KerberosConfig::kinit_cmd, ConfigType::kString, &AnyValue),
      Key("sasl.kerberos.min.time.before.relogin",
          "Login thread sleep time between refresh attempts, ms (Kafka's GSSAPI)." HR_NO_GSSAPI,
          &KerberosConfig::min_time_before_relogin, ConfigType::kLong, &LongValue),
      Key("sasl.kerberos.principal.to.local.rules",
          "Rules mapping Kerberos principal names to short names (Kafka's GSSAPI)." HR_NO_GSSAPI,
          &KerberosConfig::principal_to_local_rules, ConfigType::kList, &AnyValue),
      Key("sasl.kerberos.ticket.renew.jitter",
          "Random jitter added to the ticket renewal time (Kafka's GSSAPI)." HR_NO_GSSAPI,
          &KerberosConfig::ticket_renew_jitter, ConfigType::kDouble, &DoubleValue),
      Key("sasl.kerberos.ticket.renew.window.factor",
          "Fraction of the ticket lifetime after which the login thread renews it (Kafka's "
          "GSSAPI)." HR_NO_GSSAPI,
          &KerberosConfig::ticket_renew_window_factor, ConfigType::kDouble, &DoubleValue),
  };
  return keys;
}

}  // namespace

Status KerberosConfig::Extract(std::map<std::string, std::string>& props) {
  return ExtractFromTable(Keys(), *this, props);
}

HR_REGISTER_CONFIG_FAMILY(KerberosConfig, "kerberos", &Keys);

}  // namespace headrace::broker::sasl
