// FileAclStore: the ACLs of a single-node broker, durable in
// <data_dir>/headrace-acls.json (docs/metadata-format.md "ACL file"), and
// published to the Authorizer after every change. In a cluster the ACLs
// live in ZooKeeper instead and reach the Authorizer with the cluster state.
//
// Contract: a mutation that returns OK is durable (written atomically:
// temp file, fsync, rename, directory fsync) before the new snapshot is
// published. Mutations are serialised by mu_; checks never take it.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "broker/security/auth/acl.h"
#include "broker/security/auth/authorizer.h"
#include "common/file_env.h"

namespace headrace::broker::auth {

class FileAclStore {
 public:
  static constexpr const char* kFileName = "headrace-acls.json";
  static constexpr int kFormatVersion = 1;

  // Reads <dir>/headrace-acls.json if present and publishes it to
  // `authorizer` (which must outlive the store). Errors: Corruption for an
  // unreadable file, Unsupported for another version, IOError.
  static Result<std::unique_ptr<FileAclStore>> Open(FileEnv* env, std::string dir,
                                                    Authorizer* authorizer);

  // Adds `bindings` (already valid; duplicates of stored ones are no-ops)
  // in one durable write. Errors: the write's.
  Status Create(const std::vector<AclBinding>& bindings);
  // Removes every stored binding matched by some filter, in one durable
  // write; returns, per filter, the bindings it matched.
  Result<std::vector<std::vector<AclBinding>>> Delete(const std::vector<AclBindingFilter>& filters);

 private:
  FileAclStore(FileEnv* env, std::string dir, Authorizer* authorizer)
      : env_(env), dir_(std::move(dir)), authorizer_(authorizer) {}
  // Writes `bindings` durably, then publishes them. REQUIRES: mu_ held.
  Status CommitLocked(std::vector<AclBinding> bindings);

  FileEnv* const env_;
  const std::string dir_;
  Authorizer* const authorizer_;
  std::mutex mu_;  // serialises mutations (read-modify-write of the file)
};

// The single-node file's text for `bindings` ({"version": 1, "acls": [...]}).
std::string AclFileText(const std::vector<AclBinding>& bindings);

}  // namespace headrace::broker::auth
