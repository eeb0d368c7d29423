// Kafka's ACL model (docs/security.md "Authorisation (ACLs)"): a binding
// grants or denies one principal, from one host, one operation on one
// resource pattern. Enum values are the wire numbers of Kafka's
// ResourceType, PatternType, AclOperation and AclPermissionType; the names
// are the ones Kafka writes in ZooKeeper ("Topic", "Read", "Allow") and the
// pattern names of its JSON ("LITERAL", "PREFIXED").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "broker/base/json.h"
#include "headrace/status.h"

namespace headrace::broker::auth {

enum class ResourceType : int8_t {
  kUnknown = 0, kAny = 1, kTopic = 2, kGroup = 3, kCluster = 4,
  kTransactionalId = 5, kDelegationToken = 6, kUser = 7,
};
enum class PatternType : int8_t { kUnknown = 0, kAny = 1, kMatch = 2, kLiteral = 3, kPrefixed = 4 };
enum class AclOperation : int8_t {
  kUnknown = 0, kAny = 1, kAll = 2, kRead = 3, kWrite = 4, kCreate = 5, kDelete = 6,
  kAlter = 7, kDescribe = 8, kClusterAction = 9, kDescribeConfigs = 10, kAlterConfigs = 11,
  kIdempotentWrite = 12, kCreateTokens = 13, kDescribeTokens = 14,
};
enum class AclPermission : int8_t { kUnknown = 0, kAny = 1, kDeny = 2, kAllow = 3 };

// The one name of the CLUSTER resource, as Kafka.
inline constexpr std::string_view kClusterName = "kafka-cluster";
// The wildcard resource name (literal pattern), host and principal.
inline constexpr std::string_view kWildcard = "*";
inline constexpr std::string_view kWildcardPrincipal = "User:*";

// Wire numbers -> enums; anything outside the known range is kUnknown.
ResourceType ResourceTypeFromWire(int8_t v);
PatternType PatternTypeFromWire(int8_t v);
AclOperation OperationFromWire(int8_t v);
AclPermission PermissionFromWire(int8_t v);

// "Topic", "Group", "Cluster", "TransactionalId", "DelegationToken", "User"
// (ZooKeeper path names); "Read", "Write", ..., "IdempotentWrite";
// "Allow" / "Deny"; "LITERAL" / "PREFIXED". Parse* return kUnknown for
// anything else (case-insensitive, '_' ignored: "transactional_id" works).
const char* ResourceTypeName(ResourceType t);
const char* OperationName(AclOperation op);
const char* PermissionName(AclPermission p);
const char* PatternTypeName(PatternType p);
ResourceType ParseResourceType(std::string_view s);
AclOperation ParseOperation(std::string_view s);
AclPermission ParsePermission(std::string_view s);
PatternType ParsePatternType(std::string_view s);

struct AclBinding {
  ResourceType resource_type = ResourceType::kTopic;
  std::string resource_name;
  PatternType pattern_type = PatternType::kLiteral;
  std::string principal;  // "User:alice", "User:*"
  std::string host = "*";
  AclOperation operation = AclOperation::kRead;
  AclPermission permission = AclPermission::kAllow;

  auto operator<=>(const AclBinding&) const = default;
};

// A DescribeAcls / DeleteAcls filter: nullopt strings and the kAny enums
// match everything; pattern kMatch matches the literal `resource_name`,
// the literal "*" and every prefixed pattern that is a prefix of it (as
// Kafka's ResourcePatternFilter).
struct AclBindingFilter {
  ResourceType resource_type = ResourceType::kAny;
  std::optional<std::string> resource_name;
  PatternType pattern_type = PatternType::kAny;
  std::optional<std::string> principal;
  std::optional<std::string> host;
  AclOperation operation = AclOperation::kAny;
  AclPermission permission = AclPermission::kAny;

  bool Matches(const AclBinding& b) const;
};

// A binding CreateAcls may store: concrete type/pattern/operation/
// permission, a "type:name" principal, a non-empty resource name (the
// CLUSTER resource only as "kafka-cluster"), a non-empty host. Errors:
// InvalidArgument with Kafka's reason (the handler answers INVALID_REQUEST).
Status ValidateBinding(const AclBinding& b);
// A filter DescribeAcls / DeleteAcls accept: no UNKNOWN element.
Status ValidateFilter(const AclBindingFilter& f);

// One binding as a JSON object {"resource_type": "Topic", "pattern_type":
// "LITERAL", "name", "principal", "host", "operation": "Read",
// "permission": "Allow"} (the single-node file, the cluster state) and back.
json::Value BindingToJson(const AclBinding& b);
Result<AclBinding> BindingFromJson(const json::Value& v);
// A JSON array of those objects and back. Errors: InvalidArgument naming
// the bad element.
json::Value BindingsToJson(const std::vector<AclBinding>& bindings);
Result<std::vector<AclBinding>> BindingsFromJson(const json::Value& v);

// "(principal=User:a, host=*, operation=READ, permissionType=ALLOW) on
// Topic:LITERAL:orders", for log lines.
std::string DescribeBinding(const AclBinding& b);

}  // namespace headrace::broker::auth
