// DescribeUserScramCredentials (key 50, v0): the SCRAM mechanisms and
// iterations stored for users (never salts or keys). Null/empty user list:
// every user with a credential. Per user, as Kafka: a name asked twice is
// DUPLICATE_RESOURCE, a user without credentials RESOURCE_NOT_FOUND.
#include <map>

#include "broker/api/authorize.h"
#include "broker/api/handler.h"
#include "broker/base/kafka_error.h"
#include "broker/security/sasl/sasl_server.h"

namespace headrace::broker {
namespace {

void HandleDescribeUserScramCredentials(BrokerContext& ctx,
                                        protocol::DescribeUserScramCredentialsRequest& msg,
                                        Request req) {
  protocol::DescribeUserScramCredentialsResponse resp;
  if (!AuthorizedOnCluster(ctx, req, AclOperation::kDescribe)) {  // Kafka: DESCRIBE on CLUSTER
    resp.error_code = Code(KafkaError::kClusterAuthorizationFailed);
    resp.error_message = "Cluster authorization failed.";
    req.Reply(resp);
    return;
  }
  sasl::ScramCredentialMap all;
  if (ctx.sasl != nullptr) all = ctx.sasl->credentials().All();
  std::vector<std::string> users;
  if (msg.users && !msg.users->empty()) {
    for (const auto& u : *msg.users) users.push_back(u.name);
  } else {
    for (const auto& [u, _] : all) users.push_back(u);
  }
  std::map<std::string, int> asked;
  for (const std::string& u : users) ++asked[u];
  for (const auto& [user, times] : asked) {
    protocol::DescribeUserScramCredentialsResponse::DescribeUserScramCredentialsResult r;
    r.user = user;
    auto it = all.find(user);
    if (times > 1) {
      r.error_code = Code(KafkaError::kDuplicateResource);
      r.error_message = "Cannot describe the same user more than once";
    } else if (it == all.end()) {
      r.error_code = Code(KafkaError::kResourceNotFound);
      r.error_message = "Attempt to describe nonexistent user";
    } else {
      for (const auto& [mech, cred] : it->second) {
        protocol::DescribeUserScramCredentialsResponse::CredentialInfo info;
        info.mechanism = static_cast<int8_t>(mech);
        info.iterations = cred.iterations;
        r.credential_infos.push_back(info);
      }
    }
    resp.results.push_back(std::move(r));
  }
  req.Reply(resp);
}

}  // namespace

extern const ApiHandler kDescribeUserScramCredentialsHandler =
    MakeHandler<protocol::DescribeUserScramCredentialsRequest,
                HandleDescribeUserScramCredentials>(0, 0);

}  // namespace headrace::broker
