// Kafka's sasl.kerberos.* broker keys (GSSAPI), accepted and reported but
// without effect: headrace implements no GSSAPI (SaslHandshake never offers
// it, sasl.enabled.mechanisms refuses it). They exist so that tools and
// client test suites that set them through server.properties, AlterConfigs
// or IncrementalAlterConfigs (librdkafka's 0081_admin sets
// sasl.kerberos.min.time.before.relogin on a broker) get Kafka 3.9's
// answers: the same names, types, defaults and update mode (per-broker:
// dynamic on BROKER "<node id>", refused on the cluster default "").
// Values are checked as Kafka's ConfigDef parses them (long, double, list,
// string; Kafka has no range validators for these keys).
#pragma once

#include <map>
#include <string>

#include "broker/config/config_table.h"

namespace headrace::broker::sasl {

struct KerberosConfig {
  std::string service_name;                          // sasl.kerberos.service.name (null)
  std::string kinit_cmd = "/usr/bin/kinit";          // sasl.kerberos.kinit.cmd
  std::string min_time_before_relogin = "60000";     // sasl.kerberos.min.time.before.relogin
  std::string principal_to_local_rules = "DEFAULT";  // sasl.kerberos.principal.to.local.rules
  std::string ticket_renew_jitter = "0.05";          // sasl.kerberos.ticket.renew.jitter
  std::string ticket_renew_window_factor = "0.8";    // sasl.kerberos.ticket.renew.window.factor

  // Moves the sasl.kerberos.* keys out of `props` (a bad value: InvalidArgument).
  Status Extract(std::map<std::string, std::string>& props);
};

}  // namespace headrace::broker::sasl
