#include "broker/security/sasl/sasl_client.h"

namespace headrace::broker::sasl {

bool HasClientMechanism(std::string_view mechanism) {
  return mechanism == "PLAIN" || ScramMechanismFromName(mechanism) != ScramMechanism::kUnknown;
}

SaslClient::SaslClient(std::string mechanism, std::string user, std::string password)
    : mechanism_(std::move(mechanism)), user_(std::move(user)), password_(std::move(password)) {
  ScramMechanism m = ScramMechanismFromName(mechanism_);
  if (m != ScramMechanism::kUnknown) scram_ = std::make_unique<ScramClient>(m, user_, password_);
}

Result<std::unique_ptr<SaslClient>> SaslClient::Create(const std::string& mechanism,
                                                       const std::string& user,
                                                       const std::string& password) {
  if (!HasClientMechanism(mechanism))
    return Status::InvalidArgument("SASL mechanism " + mechanism +
                                   " has no client side (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)");
  return std::unique_ptr<SaslClient>(new SaslClient(mechanism, user, password));
}

std::string SaslClient::Start() {
  step_ = 1;
  if (scram_) return scram_->ClientFirst();
  std::string token;  // PLAIN: [authzid] NUL authcid NUL passwd, no authzid
  token += '\0';
  token += user_;
  token += '\0';
  token += password_;
  return token;
}

Result<std::string> SaslClient::Step(std::string_view server_token, bool* done) {
  *done = false;
  if (!scram_) {  // PLAIN: the server's (empty) answer ends it
    *done = true;
    return std::string();
  }
  if (step_ == 1) {
    step_ = 2;
    return scram_->ClientFinal(server_token);
  }
  HR_RETURN_IF_ERROR(scram_->VerifyServerFinal(server_token));
  *done = true;
  return std::string();
}

}  // namespace headrace::broker::sasl
