#include "broker/security/auth/authorizer_config.h"

namespace headrace::broker::auth {
namespace {

using AuthorizerKey = ConfigKey<AuthorizerConfig>;

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

const std::vector<AuthorizerKey>& Keys() {
  static const std::vector<AuthorizerKey> keys = {
      AuthorizerKey{
          "authorizer.class.name",
          "The authorizer checking every request against the ACLs; empty = no authorisation. "
          "headrace.security.AclAuthorizer, kafka.security.authorizer.AclAuthorizer and "
          "org.apache.kafka.metadata.authorizer.StandardAuthorizer all name headrace's.",
          [](AuthorizerConfig& c, const std::string& value) -> Status {
            const std::string v = Trim(value);
            if (!v.empty() && v != kAuthorizerName && v != kKafkaAclAuthorizer &&
                v != kKafkaStandardAuthorizer) {
              return Status::InvalidArgument(
                  "authorizer.class.name: unknown authorizer '" + v + "' (use " +
                  kAuthorizerName + ", " + kKafkaAclAuthorizer + " or " +
                  kKafkaStandardAuthorizer + ", or leave it empty)");
            }
            c.class_name = v;
            return Status::OK();
          },
          [](const AuthorizerConfig& c) { return c.class_name; },
          ConfigType::kClass,
          UpdateMode::kReadOnly,
          ""},
      AuthorizerKey{
          "super.users",
          "Principals (User:name) allowed every operation whatever the ACLs, separated by ';'. "
          "In a cluster, list the principal brokers use towards each other.",
          [](AuthorizerConfig& c, const std::string& value) -> Status {
            std::vector<std::string> users;
            size_t start = 0;
            while (start <= value.size()) {
              size_t end = value.find(';', start);
              if (end == std::string::npos) end = value.size();
              std::string u = Trim(value.substr(start, end - start));
              if (!u.empty()) {
                if (u.find(':') == std::string::npos || u.front() == ':' || u.back() == ':')
                  return Status::InvalidArgument("super.users: '" + u +
                                                 "' is not a principal (type:name, e.g. User:admin)");
                users.push_back(std::move(u));
              }
              start = end + 1;
            }
            c.super_users = std::move(users);
            return Status::OK();
          },
          [](const AuthorizerConfig& c) {
            std::string out;
            for (const std::string& u : c.super_users) out += (out.empty() ? "" : ";") + u;
            return out;
          },
          ConfigType::kString,
          UpdateMode::kReadOnly,
          ""},
      AuthorizerKey{
          "allow.everyone.if.no.acl.found",
          "A resource no ACL applies to is open to every principal (false: only super users).",
          [](AuthorizerConfig& c, const std::string& value) -> Status {
            const std::string v = Trim(value);
            if (v != "true" && v != "false")
              return Status::InvalidArgument(
                  "allow.everyone.if.no.acl.found: must be true or false, got '" + value + "'");
            c.allow_everyone_if_no_acl_found = v == "true";
            return Status::OK();
          },
          [](const AuthorizerConfig& c) {
            return std::string(c.allow_everyone_if_no_acl_found ? "true" : "false");
          },
          ConfigType::kBoolean,
          UpdateMode::kReadOnly,
          ""},
  };
  return keys;
}

HR_REGISTER_CONFIG_FAMILY(AuthorizerConfig, "authorizer", &Keys);

}  // namespace

Status AuthorizerConfig::Set(const std::string& key, const std::string& value) {
  return SetFromTable(Keys(), *this, key, value, "authorizer");
}

std::vector<SettingDoc> AuthorizerConfig::Describe() const { return DescribeTable(Keys(), *this); }

Status AuthorizerConfig::Extract(std::map<std::string, std::string>& props) {
  return ExtractFromTable(Keys(), *this, props);
}

}  // namespace headrace::broker::auth
