#include "broker/security/sasl/scram_store.h"

#include "broker/base/json.h"
#include "common/logging.h"

namespace headrace::broker::sasl {

std::string EncodeScramCredentialFile(const ScramCredentialMap& m) {
  json::Object users;
  for (const auto& [user, mechs] : m) {
    json::Object by_mech;
    for (const auto& [mech, cred] : mechs) by_mech[ScramMechanismName(mech)] = FormatScramCredential(cred);
    users[user] = json::Value(std::move(by_mech));
  }
  json::Object root;
  root["version"] = json::Value(int64_t{1});
  root["users"] = json::Value(std::move(users));
  return json::Write(json::Value(std::move(root)));
}

namespace {

// {"<user>": {"<mechanism>": "<text form>"}} -> the map.
Result<ScramCredentialMap> DecodeUsers(const json::Value* users) {
  ScramCredentialMap out;
  for (const auto& [user, mechs] : users->as_object()) {
    if (!mechs.is_object()) return Status::Corruption("scram-credentials.json: bad user " + user);
    for (const auto& [name, text] : mechs.as_object()) {
      ScramMechanism m = ScramMechanismFromName(name);
      if (m == ScramMechanism::kUnknown || !text.is_string())
        return Status::Corruption("scram-credentials.json: bad entry " + user + "/" + name);
      HR_ASSIGN_OR_RETURN(ScramCredential c, ParseScramCredential(text.as_string()));
      out[user][m] = std::move(c);
    }
  }
  return out;
}

}  // namespace

Result<ScramCredentialMap> DecodeScramCredentialFile(std::string_view text) {
  HR_ASSIGN_OR_RETURN(json::Value root, json::Parse(text));
  const json::Value* version = root.Find("version");
  const json::Value* users = root.Find("users");
  if (version == nullptr || !version->is_int() || version->as_int() != 1 || users == nullptr ||
      !users->is_object())
    return Status::Corruption("scram-credentials.json: expected version 1 and a users object");
  return DecodeUsers(users);
}

Status ApplyClusterScramCredentials(std::string_view state_json, ScramCredentialStore& store) {
  HR_ASSIGN_OR_RETURN(json::Value root, json::Parse(state_json));
  const json::Value* users = root.Find("scram_credentials");
  if (users == nullptr) return Status::OK();
  if (!users->is_object()) return Status::Corruption("scram_credentials: not an object");
  HR_ASSIGN_OR_RETURN(ScramCredentialMap m, DecodeUsers(users));
  return store.ReplaceAll(std::move(m));
}

Result<std::unique_ptr<ScramCredentialStore>> ScramCredentialStore::Open(const std::string& data_dir,
                                                                         FileEnv* env) {
  if (env == nullptr) env = FileEnv::Default();
  std::unique_ptr<ScramCredentialStore> store(new ScramCredentialStore(data_dir, env));
  if (data_dir.empty()) return store;
  HR_ASSIGN_OR_RETURN(std::optional<std::string> text,
                      ReadFileIfExists(*env, data_dir + "/" + kFileName));
  if (!text) return store;
  HR_ASSIGN_OR_RETURN(ScramCredentialMap m, DecodeScramCredentialFile(*text));
  store->creds_ = std::make_shared<const ScramCredentialMap>(std::move(m));
  return store;
}

std::optional<ScramCredential> ScramCredentialStore::Find(const std::string& user,
                                                          ScramMechanism m) const {
  std::shared_lock<std::shared_mutex> l(mu_);
  auto u = creds_->find(user);
  if (u == creds_->end()) return std::nullopt;
  auto c = u->second.find(m);
  if (c == u->second.end()) return std::nullopt;
  return c->second;
}

ScramCredentialMap ScramCredentialStore::All() const {
  std::shared_lock<std::shared_mutex> l(mu_);
  return *creds_;
}

Status ScramCredentialStore::Persist(const ScramCredentialMap& m) {
  if (dir_.empty()) return Status::OK();
  return WriteFileAtomically(*env_, dir_, kFileName, EncodeScramCredentialFile(m));
}

Status ScramCredentialStore::Apply(
    const std::vector<std::pair<std::string, ScramMechanism>>& deletions,
    const std::vector<std::pair<std::string, std::pair<ScramMechanism, ScramCredential>>>& upserts) {
  std::lock_guard<std::mutex> w(write_mu_);
  ScramCredentialMap next = All();
  for (const auto& [user, mech] : deletions) {
    auto u = next.find(user);
    if (u == next.end()) continue;
    u->second.erase(mech);
    if (u->second.empty()) next.erase(u);
  }
  for (const auto& [user, mc] : upserts) next[user][mc.first] = mc.second;
  HR_RETURN_IF_ERROR(Persist(next));
  std::unique_lock<std::shared_mutex> l(mu_);
  creds_ = std::make_shared<const ScramCredentialMap>(std::move(next));
  return Status::OK();
}

Status ScramCredentialStore::ReplaceAll(ScramCredentialMap next) {
  std::lock_guard<std::mutex> w(write_mu_);
  if (All() == next) return Status::OK();
  Status st = Persist(next);
  if (!st.ok()) {
    HR_LOG(kWarn) << "SCRAM credentials from ZooKeeper not saved locally: " << st.message();
  }
  std::unique_lock<std::shared_mutex> l(mu_);
  creds_ = std::make_shared<const ScramCredentialMap>(std::move(next));
  return Status::OK();
}

}  // namespace headrace::broker::sasl
