// The SCRAM credentials the broker authenticates against, per user and
// mechanism (docs/security.md "SCRAM credentials").
//
// Single node: <data_dir>/scram-credentials.json (docs/metadata-format.md),
//   {"version": 1, "users": {"<user>": {"SCRAM-SHA-256": "salt=..,stored_key=..,
//    server_key=..,iterations=4096"}}}
// — each value in Kafka's ZooKeeper text form — replaced atomically
// (WriteFileAtomically) before a change is answered. Cluster mode:
// ZooKeeper's /config/users/<user> is the source (written by the control
// plane on AlterUserScramCredentials); every broker's control plane hands
// the whole set to ReplaceAll with each cluster state, and the file is this
// broker's copy of the last set seen.
//
// Threading: thread-safe. Lookups (the SASL exchange, on I/O threads) take a
// shared lock; changes are serialised and swap in a new map.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>

#include "broker/security/sasl/scram.h"
#include "common/file_env.h"
#include "headrace/status.h"

namespace headrace::broker::sasl {

// user -> mechanism -> credential
using ScramCredentialMap = std::map<std::string, std::map<ScramMechanism, ScramCredential>>;

class ScramCredentialStore {
 public:
  static constexpr const char* kFileName = "scram-credentials.json";

  // Reads `data_dir`/scram-credentials.json (absent = no users). `env` null
  // = the OS; it must outlive the store. Errors: Corruption for a file that
  // does not parse.
  static Result<std::unique_ptr<ScramCredentialStore>> Open(const std::string& data_dir,
                                                            FileEnv* env);

  std::optional<ScramCredential> Find(const std::string& user, ScramMechanism m) const;
  ScramCredentialMap All() const;

  // Applies deletions then upserts, persists, then makes them visible.
  // Errors: IOError (nothing changed).
  Status Apply(const std::vector<std::pair<std::string, ScramMechanism>>& deletions,
               const std::vector<std::pair<std::string, std::pair<ScramMechanism, ScramCredential>>>&
                   upserts);
  // Cluster mode: the set ZooKeeper holds now (no-op when equal).
  Status ReplaceAll(ScramCredentialMap next);

 private:
  ScramCredentialStore(std::string dir, FileEnv* env) : dir_(std::move(dir)), env_(env) {}
  Status Persist(const ScramCredentialMap& m);

  const std::string dir_;
  FileEnv* const env_;
  std::mutex write_mu_;  // serialises changes (held across the file write)
  mutable std::shared_mutex mu_;
  std::shared_ptr<const ScramCredentialMap> creds_ = std::make_shared<ScramCredentialMap>();  // guarded by mu_
};

// Cluster mode: applies the "scram_credentials" member of a cluster state
// JSON ({"<user>": {"SCRAM-SHA-256": "<Kafka text form>"}}, read by the
// control plane from /config/users) with ReplaceAll; no member = no change.
// Errors: Corruption (the store is left as it was).
Status ApplyClusterScramCredentials(std::string_view state_json, ScramCredentialStore& store);

std::string EncodeScramCredentialFile(const ScramCredentialMap& m);
Result<ScramCredentialMap> DecodeScramCredentialFile(std::string_view text);

}  // namespace headrace::broker::sasl
