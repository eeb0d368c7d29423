// AlterUserScramCredentials (key 51, v0): deletes and upserts users' SCRAM
// credentials (the client sends salt + SaltedPassword; the broker keeps
// salt, StoredKey, ServerKey, iterations). One result per user; a user with
// any bad item changes nothing, as Kafka:
//   unknown mechanism: UNSUPPORTED_SASL_MECHANISM; empty name, empty salt or
//   password, iterations outside [4096, 16384]: UNACCEPTABLE_CREDENTIAL; the
//   same (user, mechanism) twice: DUPLICATE_RESOURCE; deleting a credential
//   that does not exist: RESOURCE_NOT_FOUND.
// Single node: the store's file is replaced (fsync) before the answer, so
// it runs on the admin worker. Cluster mode: the control plane writes
// /config/users/<user> in ZooKeeper and every broker applies it with the
// next cluster state (security/sasl/scram_store.h).
#include <map>
#include <set>

#include "broker/api/authorize.h"
#include "broker/api/cluster_admin.h"
#include "broker/api/handler.h"
#include "broker/base/json.h"
#include "broker/base/kafka_error.h"
#include "broker/security/sasl/sasl_server.h"

namespace headrace::broker {
namespace {

using Deletion = std::pair<std::string, sasl::ScramMechanism>;
using Upsert = std::pair<std::string, std::pair<sasl::ScramMechanism, sasl::ScramCredential>>;

struct UserError {
  KafkaError code = KafkaError::kNone;
  std::string message;
};

void SetError(UserError& e, KafkaError code, std::string message) {
  if (e.code == KafkaError::kNone) e = {code, std::move(message)};
}

// Cluster mode: hands the changes to the control plane and waits for it.
Status ApplyInCluster(const BrokerContext& ctx, const std::vector<Deletion>& deletions,
                      const std::vector<Upsert>& upserts) {
  json::Array del, up;
  for (const auto& [user, mech] : deletions)
    del.push_back(json::Object{{"user", user}, {"mechanism", sasl::ScramMechanismName(mech)}});
  for (const auto& [user, mc] : upserts)
    up.push_back(json::Object{{"user", user},
                              {"mechanism", sasl::ScramMechanismName(mc.first)},
                              {"credential", sasl::FormatScramCredential(mc.second)}});
  return CallControlPlane(ctx, "alter_user_scram_credentials",
                          json::Object{{"deletions", json::Value(std::move(del))},
                                       {"upsertions", json::Value(std::move(up))}});
}

void HandleAlterUserScramCredentials(BrokerContext& ctx,
                                     protocol::AlterUserScramCredentialsRequest& msg,
                                     Request req) {
  protocol::AlterUserScramCredentialsResponse resp;
  if (ctx.sasl == nullptr) {
    req.Reply(resp);
    return;
  }
  sasl::ScramCredentialStore& store = ctx.sasl->credentials();
  const sasl::ScramCredentialMap existing = store.All();
  std::map<std::string, UserError> errors;  // every user named, in order
  std::set<std::pair<std::string, int8_t>> seen;
  std::vector<Deletion> deletions;
  std::vector<Upsert> upserts;
  auto check = [&](const std::string& user, int8_t mech_id) -> sasl::ScramMechanism {
    UserError& e = errors[user];
    sasl::ScramMechanism m = sasl::ScramMechanismFromId(mech_id);
    if (user.empty()) SetError(e, KafkaError::kUnacceptableCredential, "Username must not be empty");
    if (m == sasl::ScramMechanism::kUnknown)
      SetError(e, KafkaError::kUnsupportedSaslMechanism, "Unknown SCRAM mechanism");
    if (!seen.insert({user, mech_id}).second)
      SetError(e, KafkaError::kDuplicateResource,
               "A user credential cannot be altered twice in the same request");
    return m;
  };
  for (const auto& d : msg.deletions) {
    sasl::ScramMechanism m = check(d.name, d.mechanism);
    auto u = existing.find(d.name);
    if (m != sasl::ScramMechanism::kUnknown &&
        (u == existing.end() || u->second.count(m) == 0))
      SetError(errors[d.name], KafkaError::kResourceNotFound,
               "Attempt to delete a user credential that does not exist");
    deletions.push_back({d.name, m});
  }
  for (const auto& u : msg.upsertions) {
    sasl::ScramMechanism m = check(u.name, u.mechanism);
    UserError& e = errors[u.name];
    if (u.iterations < sasl::kScramMinIterations)
      SetError(e, KafkaError::kUnacceptableCredential, "Too few iterations");
    if (u.iterations > sasl::kScramMaxIterations)
      SetError(e, KafkaError::kUnacceptableCredential, "Too many iterations");
    if (u.salt.empty() || u.salted_password.empty())
      SetError(e, KafkaError::kUnacceptableCredential, "Salt and salted password must not be empty");
    if (m == sasl::ScramMechanism::kUnknown || e.code != KafkaError::kNone) continue;
    upserts.push_back(
        {u.name, {m, sasl::CredentialFromSaltedPassword(m, u.salted_password, u.salt, u.iterations)}});
  }
  // Kafka: ALTER on the CLUSTER, else every user gets CLUSTER_AUTHORIZATION_FAILED.
  if (!AuthorizedOnCluster(ctx, req, AclOperation::kAlter)) {
    for (auto& [user, e] : errors) {
      e = {KafkaError::kClusterAuthorizationFailed, "Cluster authorization failed."};
    }
  }
  std::erase_if(deletions, [&](const Deletion& d) { return errors[d.first].code != KafkaError::kNone; });
  std::erase_if(upserts, [&](const Upsert& u) { return errors[u.first].code != KafkaError::kNone; });
  Status st = Status::OK();
  if (!deletions.empty() || !upserts.empty()) {
    ClusterState* cluster = ctx.state->cluster();
    if (cluster == nullptr) {
      st = store.Apply(deletions, upserts);
    } else {
      st = ApplyInCluster(ctx, deletions, upserts);
      // Read-your-writes on this broker; the next cluster state confirms it.
      if (st.ok()) (void)store.Apply(deletions, upserts);
    }
  }
  for (const auto& [user, e] : errors) {
    protocol::AlterUserScramCredentialsResponse::AlterUserScramCredentialsResult r;
    r.user = user;
    if (e.code != KafkaError::kNone) {
      r.error_code = Code(e.code);
      r.error_message = e.message;
    } else if (!st.ok()) {
      r.error_code = Code(ToKafkaError(st));
      r.error_message = st.message();
    }
    resp.results.push_back(std::move(r));
  }
  req.Reply(resp);
}

}  // namespace

extern const ApiHandler kAlterUserScramCredentialsHandler =
    MakeHandler<protocol::AlterUserScramCredentialsRequest,
                OnAdminWorker<protocol::AlterUserScramCredentialsRequest,
                              HandleAlterUserScramCredentials>>(0, 0);

}  // namespace headrace::broker
