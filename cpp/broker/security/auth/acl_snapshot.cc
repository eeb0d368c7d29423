#include "broker/security/auth/acl_snapshot.h"

#include <algorithm>

namespace headrace::broker::auth {
namespace {

bool PrincipalMatches(std::string_view acl, std::string_view principal) {
  return acl == principal || acl == kWildcardPrincipal;
}
bool HostMatches(std::string_view acl, std::string_view host) {
  return acl == host || acl == kWildcard;
}
// Whether an ALLOW for `granted` also allows `wanted` (Kafka's implied
// operations).
bool Implies(AclOperation granted, AclOperation wanted) {
  if (granted == wanted || granted == AclOperation::kAll) return true;
  if (wanted == AclOperation::kDescribe) {
    return granted == AclOperation::kRead || granted == AclOperation::kWrite ||
           granted == AclOperation::kDelete || granted == AclOperation::kAlter;
  }
  if (wanted == AclOperation::kDescribeConfigs) return granted == AclOperation::kAlterConfigs;
  return false;
}

}  // namespace

AclSnapshot::AclSnapshot(std::vector<AclBinding> bindings) : all_(std::move(bindings)) {
  std::sort(all_.begin(), all_.end());
  all_.erase(std::unique(all_.begin(), all_.end()), all_.end());
  for (const AclBinding& b : all_) {
    const auto t = static_cast<size_t>(b.resource_type);
    if (t >= kTypes) continue;
    TypeIndex& ti = by_type_[t];
    Entry e{b.principal, b.host, b.operation, b.permission};
    if (b.pattern_type == PatternType::kPrefixed) {
      ti.prefixed[b.resource_name].push_back(std::move(e));
      ti.prefix_lengths.push_back(b.resource_name.size());
    } else {
      ti.literal[b.resource_name].push_back(std::move(e));
    }
  }
  for (TypeIndex& ti : by_type_) {
    std::sort(ti.prefix_lengths.begin(), ti.prefix_lengths.end());
    ti.prefix_lengths.erase(std::unique(ti.prefix_lengths.begin(), ti.prefix_lengths.end()),
                            ti.prefix_lengths.end());
  }
}

template <typename Fn>
void AclSnapshot::ForApplicable(ResourceType type, std::string_view name, Fn&& fn) const {
  const auto t = static_cast<size_t>(type);
  if (t >= kTypes) return;
  const TypeIndex& ti = by_type_[t];
  if (!ti.literal.empty()) {
    if (auto it = ti.literal.find(name); it != ti.literal.end()) fn(it->second);
    if (name != kWildcard) {
      if (auto it = ti.literal.find(kWildcard); it != ti.literal.end()) fn(it->second);
    }
  }
  for (size_t len : ti.prefix_lengths) {
    if (len > name.size()) break;
    if (auto it = ti.prefixed.find(name.substr(0, len)); it != ti.prefixed.end()) fn(it->second);
  }
}

bool AclSnapshot::Authorize(std::string_view principal, std::string_view host, AclOperation op,
                            ResourceType type, std::string_view name, bool allow_if_none) const {
  bool any = false, denied = false, allowed = false;
  ForApplicable(type, name, [&](const std::vector<Entry>& entries) {
    any = any || !entries.empty();
    for (const Entry& e : entries) {
      if (!PrincipalMatches(e.principal, principal) || !HostMatches(e.host, host)) continue;
      if (e.permission == AclPermission::kDeny) {
        if (e.operation == op || e.operation == AclOperation::kAll) denied = true;
      } else if (Implies(e.operation, op)) {
        allowed = true;
      }
    }
  });
  if (denied) return false;
  if (!any) return allow_if_none;
  return allowed;
}

bool AclSnapshot::AuthorizeAny(std::string_view principal, std::string_view host,
                               AclOperation op, ResourceType type, bool allow_if_none) const {
  auto matches = [&](const AclBinding& b, AclPermission perm) {
    return b.resource_type == type && b.permission == perm &&
           PrincipalMatches(b.principal, principal) && HostMatches(b.host, host) &&
           (perm == AclPermission::kAllow ? Implies(b.operation, op)
                                          : (b.operation == op || b.operation == AclOperation::kAll));
  };
  bool any_of_type = false;
  for (const AclBinding& allow : all_) {
    if (allow.resource_type == type) any_of_type = true;
    if (!matches(allow, AclPermission::kAllow)) continue;
    // Covered by a DENY on "*", on the same pattern, or on a prefix of it?
    bool covered = false;
    for (const AclBinding& deny : all_) {
      if (!matches(deny, AclPermission::kDeny)) continue;
      if ((deny.pattern_type == PatternType::kLiteral && deny.resource_name == kWildcard) ||
          (deny.pattern_type == allow.pattern_type && deny.resource_name == allow.resource_name) ||
          (deny.pattern_type == PatternType::kPrefixed &&
           std::string_view(allow.resource_name).starts_with(deny.resource_name))) {
        covered = true;
        break;
      }
    }
    if (!covered) return true;
  }
  return !any_of_type && allow_if_none;
}

}  // namespace headrace::broker::auth
