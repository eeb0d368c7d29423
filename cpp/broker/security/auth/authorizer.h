// Authorizer: the one check every Kafka API handler makes per resource
// (broker/api/authorize.h is the handlers' door to it).
//
// Threading: Authorize* may be called from any thread at any time. The ACLs
// are an immutable AclSnapshot published through an atomic shared_ptr; a
// check loads it once (no lock, no allocation). Publish may be called from
// any thread (writers serialise on write_mu_); a check that began before it
// sees the old snapshot.
//
// Disabled (authorizer.class.name unset) every check returns true after one
// branch on a const bool.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "broker/security/auth/acl_snapshot.h"
#include "broker/security/auth/authorizer_config.h"

namespace headrace::broker::auth {

class Authorizer {
 public:
  explicit Authorizer(AuthorizerConfig config);

  bool enabled() const { return enabled_; }
  const AuthorizerConfig& config() const { return config_; }

  // May `principal` from `host` do `op` on the resource? Super users: yes.
  bool Authorize(std::string_view principal, std::string_view host, AclOperation op,
                 ResourceType type, std::string_view name) const {
    if (!enabled_) return true;
    return CheckEnabled(principal, host, op, type, name);
  }
  // Kafka's authorizeByResourceType (AclSnapshot::AuthorizeAny).
  bool AuthorizeAny(std::string_view principal, std::string_view host, AclOperation op,
                    ResourceType type) const;

  bool IsSuperUser(std::string_view principal) const;

  // The ACLs now in force (never null).
  std::shared_ptr<const AclSnapshot> snapshot() const {
    return snapshot_.load(std::memory_order_acquire);
  }
  // Replaces the ACLs in force. REQUIRES: `s` not null.
  void Publish(std::shared_ptr<const AclSnapshot> s) {
    std::lock_guard<std::mutex> lock(write_mu_);
    snapshot_.store(std::move(s), std::memory_order_release);
  }
  // Publishes the ACLs in force plus `add` minus `remove`: a cluster-mode
  // broker applies its own CreateAcls/DeleteAcls at once (read-your-writes,
  // as Kafka's ZooKeeper authorizer updated its cache), before the change
  // comes back from ZooKeeper with the cluster state.
  void Update(const std::vector<AclBinding>& add, const std::vector<AclBinding>& remove);

 private:
  bool CheckEnabled(std::string_view principal, std::string_view host, AclOperation op,
                    ResourceType type, std::string_view name) const;

  const AuthorizerConfig config_;
  const bool enabled_;
  std::mutex write_mu_;  // serialises Publish/Update; checks never take it
  std::atomic<std::shared_ptr<const AclSnapshot>> snapshot_;
};

}  // namespace headrace::broker::auth
