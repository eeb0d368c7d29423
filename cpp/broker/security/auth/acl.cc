#include "broker/security/auth/acl.h"

#include <array>
#include <cctype>
#include <utility>

namespace headrace::broker::auth {
namespace {

// "transactional_id", "TransactionalId", "TRANSACTIONAL-ID" -> "transactionalid".
std::string Fold(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '_' || c == '-') continue;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

template <typename E, size_t N>
E ParseByName(std::string_view s, const std::array<std::pair<E, const char*>, N>& names) {
  const std::string folded = Fold(s);
  for (const auto& [e, name] : names)
    if (Fold(name) == folded) return e;
  return E::kUnknown;
}

template <typename E, size_t N>
const char* NameOf(E e, const std::array<std::pair<E, const char*>, N>& names) {
  for (const auto& [v, name] : names)
    if (v == e) return name;
  return "Unknown";
}

constexpr std::array<std::pair<ResourceType, const char*>, 7> kResourceNames = {{
    {ResourceType::kAny, "Any"},
    {ResourceType::kTopic, "Topic"},
    {ResourceType::kGroup, "Group"},
    {ResourceType::kCluster, "Cluster"},
    {ResourceType::kTransactionalId, "TransactionalId"},
    {ResourceType::kDelegationToken, "DelegationToken"},
    {ResourceType::kUser, "User"},
}};
constexpr std::array<std::pair<AclOperation, const char*>, 14> kOperationNames = {{
    {AclOperation::kAny, "Any"},
    {AclOperation::kAll, "All"},
    {AclOperation::kRead, "Read"},
    {AclOperation::kWrite, "Write"},
    {AclOperation::kCreate, "Create"},
    {AclOperation::kDelete, "Delete"},
    {AclOperation::kAlter, "Alter"},
    {AclOperation::kDescribe, "Describe"},
    {AclOperation::kClusterAction, "ClusterAction"},
    {AclOperation::kDescribeConfigs, "DescribeConfigs"},
    {AclOperation::kAlterConfigs, "AlterConfigs"},
    {AclOperation::kIdempotentWrite, "IdempotentWrite"},
    {AclOperation::kCreateTokens, "CreateTokens"},
    {AclOperation::kDescribeTokens, "DescribeTokens"},
}};
constexpr std::array<std::pair<AclPermission, const char*>, 3> kPermissionNames = {{
    {AclPermission::kAny, "Any"},
    {AclPermission::kDeny, "Deny"},
    {AclPermission::kAllow, "Allow"},
}};
constexpr std::array<std::pair<PatternType, const char*>, 4> kPatternNames = {{
    {PatternType::kAny, "ANY"},
    {PatternType::kMatch, "MATCH"},
    {PatternType::kLiteral, "LITERAL"},
    {PatternType::kPrefixed, "PREFIXED"},
}};

Status Bad(std::string why) { return Status::InvalidArgument(std::move(why)); }

const std::string* StringField(const json::Value& v, const char* key) {
  const json::Value* f = v.Find(key);
  return f != nullptr && f->is_string() ? &f->as_string() : nullptr;
}

}  // namespace

ResourceType ResourceTypeFromWire(int8_t v) {
  return v >= 1 && v <= 7 ? static_cast<ResourceType>(v) : ResourceType::kUnknown;
}
PatternType PatternTypeFromWire(int8_t v) {
  return v >= 1 && v <= 4 ? static_cast<PatternType>(v) : PatternType::kUnknown;
}
AclOperation OperationFromWire(int8_t v) {
  return v >= 1 && v <= 14 ? static_cast<AclOperation>(v) : AclOperation::kUnknown;
}
AclPermission PermissionFromWire(int8_t v) {
  return v >= 1 && v <= 3 ? static_cast<AclPermission>(v) : AclPermission::kUnknown;
}

const char* ResourceTypeName(ResourceType t) { return NameOf(t, kResourceNames); }
const char* OperationName(AclOperation op) { return NameOf(op, kOperationNames); }
const char* PermissionName(AclPermission p) { return NameOf(p, kPermissionNames); }
const char* PatternTypeName(PatternType p) { return NameOf(p, kPatternNames); }
ResourceType ParseResourceType(std::string_view s) { return ParseByName(s, kResourceNames); }
AclOperation ParseOperation(std::string_view s) { return ParseByName(s, kOperationNames); }
AclPermission ParsePermission(std::string_view s) { return ParseByName(s, kPermissionNames); }
PatternType ParsePatternType(std::string_view s) { return ParseByName(s, kPatternNames); }

bool AclBindingFilter::Matches(const AclBinding& b) const {
  if (resource_type != ResourceType::kAny && resource_type != b.resource_type) return false;
  if (principal && *principal != b.principal) return false;
  if (host && *host != b.host) return false;
  if (operation != AclOperation::kAny && operation != b.operation) return false;
  if (permission != AclPermission::kAny && permission != b.permission) return false;
  switch (pattern_type) {
    case PatternType::kAny:
      return !resource_name || *resource_name == b.resource_name;
    case PatternType::kMatch:
      if (!resource_name) return true;
      if (b.pattern_type == PatternType::kLiteral)
        return b.resource_name == *resource_name || b.resource_name == kWildcard;
      return std::string_view(*resource_name).starts_with(b.resource_name);
    default:
      return pattern_type == b.pattern_type && (!resource_name || *resource_name == b.resource_name);
  }
}

Status ValidateBinding(const AclBinding& b) {
  if (b.resource_type == ResourceType::kUnknown || b.resource_type == ResourceType::kAny)
    return Bad("Invalid resource type: an ACL needs a concrete resource type");
  if (b.pattern_type != PatternType::kLiteral && b.pattern_type != PatternType::kPrefixed)
    return Bad("Invalid pattern type: an ACL needs LITERAL or PREFIXED");
  if (b.operation == AclOperation::kUnknown || b.operation == AclOperation::kAny)
    return Bad("Invalid operation: an ACL needs a concrete operation");
  if (b.permission != AclPermission::kAllow && b.permission != AclPermission::kDeny)
    return Bad("Invalid permission type: an ACL needs ALLOW or DENY");
  if (b.resource_name.empty()) return Bad("Resource name must not be empty");
  if (b.resource_type == ResourceType::kCluster && b.resource_name != kClusterName)
    return Bad("The only valid name for the CLUSTER resource is kafka-cluster");
  const size_t colon = b.principal.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == b.principal.size())
    return Bad("Could not parse principal from `" + b.principal + "` (no colon is present " +
               "separating the principal type from the principal name)");
  if (b.host.empty()) return Bad("Host must not be empty (use * for every host)");
  return Status::OK();
}

Status ValidateFilter(const AclBindingFilter& f) {
  if (f.resource_type == ResourceType::kUnknown || f.pattern_type == PatternType::kUnknown ||
      f.operation == AclOperation::kUnknown || f.permission == AclPermission::kUnknown)
    return Bad("The filter contains UNKNOWN elements");
  return Status::OK();
}

json::Value BindingToJson(const AclBinding& b) {
  return json::Value(json::Object{{"resource_type", ResourceTypeName(b.resource_type)},
                                  {"pattern_type", PatternTypeName(b.pattern_type)},
                                  {"name", b.resource_name},
                                  {"principal", b.principal},
                                  {"host", b.host},
                                  {"operation", OperationName(b.operation)},
                                  {"permission", PermissionName(b.permission)}});
}

Result<AclBinding> BindingFromJson(const json::Value& v) {
  if (!v.is_object()) return Bad("an ACL must be an object");
  const std::string* type = StringField(v, "resource_type");
  const std::string* pattern = StringField(v, "pattern_type");
  const std::string* name = StringField(v, "name");
  const std::string* principal = StringField(v, "principal");
  const std::string* host = StringField(v, "host");
  const std::string* op = StringField(v, "operation");
  const std::string* perm = StringField(v, "permission");
  if (!type || !pattern || !name || !principal || !host || !op || !perm)
    return Bad("an ACL needs resource_type, pattern_type, name, principal, host, operation, "
               "permission (strings)");
  AclBinding b{ParseResourceType(*type), *name, ParsePatternType(*pattern), *principal,
               *host, ParseOperation(*op), ParsePermission(*perm)};
  HR_RETURN_IF_ERROR(ValidateBinding(b));
  return b;
}

json::Value BindingsToJson(const std::vector<AclBinding>& bindings) {
  json::Array out;
  out.reserve(bindings.size());
  for (const AclBinding& b : bindings) out.push_back(BindingToJson(b));
  return json::Value(std::move(out));
}

Result<std::vector<AclBinding>> BindingsFromJson(const json::Value& v) {
  if (!v.is_array()) return Bad("acls must be an array");
  std::vector<AclBinding> out;
  for (size_t i = 0; i < v.as_array().size(); ++i) {
    auto b = BindingFromJson(v.as_array()[i]);
    if (!b.ok()) return Bad("acls[" + std::to_string(i) + "]: " + b.status().message());
    out.push_back(std::move(b).value());
  }
  return out;
}

std::string DescribeBinding(const AclBinding& b) {
  return std::string("(principal=") + b.principal + ", host=" + b.host +
         ", operation=" + OperationName(b.operation) +
         ", permissionType=" + PermissionName(b.permission) + ") on " +
         ResourceTypeName(b.resource_type) + ":" + PatternTypeName(b.pattern_type) + ":" +
         b.resource_name;
}

}  // namespace headrace::broker::auth
