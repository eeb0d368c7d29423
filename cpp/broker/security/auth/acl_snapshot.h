// AclSnapshot: an immutable, indexed set of ACL bindings and Kafka's
// authorisation decision over it. Built once per change (CreateAcls,
// DeleteAcls, a new cluster state) and then only read, by any number of
// threads without a lock (the Authorizer swaps whole snapshots).
//
// Decision for (principal, host, operation, resource) — Kafka's
// AclAuthorizer rules:
//   1. the ACLs that apply to the resource are those on its literal name,
//      on the literal "*" of its type, and on every prefixed pattern that
//      is a prefix of its name;
//   2. a DENY matching the principal (or User:*), the host (or *) and the
//      operation (or ALL) wins;
//   3. no ACL at all applies: `allow_if_none` (allow.everyone.if.no.acl.found);
//   4. an ALLOW matching principal/host and the operation, ALL, or an
//      operation that implies it (READ/WRITE/DELETE/ALTER imply DESCRIBE;
//      ALTER_CONFIGS implies DESCRIBE_CONFIGS) allows; otherwise denied.
// Super users are the Authorizer's business, not the snapshot's.
//
// Cost: one hash lookup for the name, one for "*", and one per distinct
// prefixed-pattern length of the resource type that fits the name (none
// when there is no prefixed ACL); bench/acl_bench.cc, docs/performance.md.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "broker/security/auth/acl.h"

namespace headrace::broker::auth {

class AclSnapshot {
 public:
  AclSnapshot() = default;
  // Duplicates are kept once; `bindings()` comes out sorted.
  explicit AclSnapshot(std::vector<AclBinding> bindings);

  // Kafka's decision (above) for a concrete resource name.
  bool Authorize(std::string_view principal, std::string_view host, AclOperation op,
                 ResourceType type, std::string_view name, bool allow_if_none) const;
  // Kafka's authorizeByResourceType: may the principal do `op` on at least
  // one resource of `type` (an ALLOW on some pattern not covered by a
  // matching DENY on "*" or on that same pattern or a prefix of it)?
  // Without any ACL of the type: `allow_if_none`.
  bool AuthorizeAny(std::string_view principal, std::string_view host, AclOperation op,
                    ResourceType type, bool allow_if_none) const;

  const std::vector<AclBinding>& bindings() const { return all_; }
  bool empty() const { return all_.empty(); }

 private:
  struct Entry {
    std::string principal;
    std::string host;
    AclOperation operation;
    AclPermission permission;
  };
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using Index = std::unordered_map<std::string, std::vector<Entry>, Hash, std::equal_to<>>;
  struct TypeIndex {
    Index literal;
    Index prefixed;
    std::vector<size_t> prefix_lengths;  // distinct lengths of `prefixed` keys, ascending
  };
  static constexpr size_t kTypes = 8;  // ResourceType wire values 0..7

  // Calls fn(entries) for every entry list that applies to (type, name).
  template <typename Fn>
  void ForApplicable(ResourceType type, std::string_view name, Fn&& fn) const;

  std::vector<AclBinding> all_;
  TypeIndex by_type_[kTypes];
};

}  // namespace headrace::broker::auth
