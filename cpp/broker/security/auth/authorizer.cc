#include "broker/security/auth/authorizer.h"

#include <algorithm>

namespace headrace::broker::auth {

Authorizer::Authorizer(AuthorizerConfig config)
    : config_(std::move(config)),
      enabled_(config_.enabled()),
      snapshot_(std::make_shared<const AclSnapshot>()) {}

void Authorizer::Update(const std::vector<AclBinding>& add, const std::vector<AclBinding>& remove) {
  std::lock_guard<std::mutex> lock(write_mu_);
  std::vector<AclBinding> next;
  for (const AclBinding& b : snapshot_.load(std::memory_order_acquire)->bindings()) {
    if (std::find(remove.begin(), remove.end(), b) == remove.end()) next.push_back(b);
  }
  next.insert(next.end(), add.begin(), add.end());
  snapshot_.store(std::make_shared<const AclSnapshot>(std::move(next)), std::memory_order_release);
}

bool Authorizer::IsSuperUser(std::string_view principal) const {
  return std::find(config_.super_users.begin(), config_.super_users.end(), principal) !=
         config_.super_users.end();
}

bool Authorizer::CheckEnabled(std::string_view principal, std::string_view host, AclOperation op,
                              ResourceType type, std::string_view name) const {
  if (IsSuperUser(principal)) return true;
  return snapshot()->Authorize(principal, host, op, type, name,
                               config_.allow_everyone_if_no_acl_found);
}

bool Authorizer::AuthorizeAny(std::string_view principal, std::string_view host,
                              AclOperation op, ResourceType type) const {
  if (!enabled_ || IsSuperUser(principal)) return true;
  return snapshot()->AuthorizeAny(principal, host, op, type,
                                  config_.allow_everyone_if_no_acl_found);
}

}  // namespace headrace::broker::auth
