#include "broker/security/auth/acl_store.h"

#include <algorithm>

namespace headrace::broker::auth {

std::string AclFileText(const std::vector<AclBinding>& bindings) {
  return json::Write(json::Value(json::Object{{"version", int64_t{FileAclStore::kFormatVersion}},
                                              {"acls", BindingsToJson(bindings)}})) +
         "\n";
}

Result<std::unique_ptr<FileAclStore>> FileAclStore::Open(FileEnv* env, std::string dir,
                                                         Authorizer* authorizer) {
  FileEnv& e = env ? *env : *FileEnv::Default();
  std::unique_ptr<FileAclStore> store(new FileAclStore(&e, dir, authorizer));
  HR_ASSIGN_OR_RETURN(std::optional<std::string> text, ReadFileIfExists(e, dir + "/" + kFileName));
  if (!text) return store;
  auto root = json::Parse(*text);
  const std::string where = dir + "/" + kFileName + ": ";
  if (!root.ok() || !root->is_object()) return Status::Corruption(where + "not a JSON object");
  const json::Value* version = root->Find("version");
  if (version == nullptr || !version->is_int() || version->as_int() != kFormatVersion)
    return Status::Unsupported(where + "unknown version (this broker reads version 1)");
  const json::Value* acls = root->Find("acls");
  if (acls == nullptr) return Status::Corruption(where + "no acls array");
  auto bindings = BindingsFromJson(*acls);
  if (!bindings.ok()) return Status::Corruption(where + bindings.status().message());
  authorizer->Publish(std::make_shared<const AclSnapshot>(std::move(bindings).value()));
  return store;
}

Status FileAclStore::CommitLocked(std::vector<AclBinding> bindings) {
  auto snapshot = std::make_shared<const AclSnapshot>(std::move(bindings));
  HR_RETURN_IF_ERROR(WriteFileAtomically(*env_, dir_, kFileName, AclFileText(snapshot->bindings())));
  authorizer_->Publish(std::move(snapshot));
  return Status::OK();
}

Status FileAclStore::Create(const std::vector<AclBinding>& bindings) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<AclBinding> all = authorizer_->snapshot()->bindings();
  all.insert(all.end(), bindings.begin(), bindings.end());
  return CommitLocked(std::move(all));
}

Result<std::vector<std::vector<AclBinding>>> FileAclStore::Delete(
    const std::vector<AclBindingFilter>& filters) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::vector<AclBinding>& current = authorizer_->snapshot()->bindings();
  std::vector<std::vector<AclBinding>> matched(filters.size());
  std::vector<AclBinding> kept;
  for (const AclBinding& b : current) {
    bool removed = false;
    for (size_t i = 0; i < filters.size(); ++i) {
      if (filters[i].Matches(b)) {
        matched[i].push_back(b);
        removed = true;
      }
    }
    if (!removed) kept.push_back(b);
  }
  if (kept.size() != current.size()) HR_RETURN_IF_ERROR(CommitLocked(std::move(kept)));
  return matched;
}

}  // namespace headrace::broker::auth
