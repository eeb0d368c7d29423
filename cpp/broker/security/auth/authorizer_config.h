// The authorizer's broker settings (docs/security.md, docs/configuration.md):
// authorizer.class.name, super.users, allow.everyone.if.no.acl.found, with
// Kafka's names and defaults. One table, registered as the "authorizer"
// family.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "broker/config/config_table.h"

namespace headrace::broker::auth {

// headrace's own authorizer name; Kafka's two class names are accepted as
// names of the same authorizer so server.properties carry over.
inline constexpr const char* kAuthorizerName = "headrace.security.AclAuthorizer";
inline constexpr const char* kKafkaAclAuthorizer = "kafka.security.authorizer.AclAuthorizer";
inline constexpr const char* kKafkaStandardAuthorizer =
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer";

struct AuthorizerConfig {
  // authorizer.class.name: "" = no authorisation (every check passes and
  // the ACL APIs answer SECURITY_DISABLED).
  std::string class_name;
  // super.users: principals ("User:admin") every check lets through.
  std::vector<std::string> super_users;
  // allow.everyone.if.no.acl.found: a resource no ACL applies to is open.
  bool allow_everyone_if_no_acl_found = false;

  bool enabled() const { return !class_name.empty(); }
  Status Set(const std::string& key, const std::string& value);
  std::vector<SettingDoc> Describe() const;
  // Moves every authorizer setting out of `props`. Errors as Set.
  Status Extract(std::map<std::string, std::string>& props);
};

}  // namespace headrace::broker::auth
