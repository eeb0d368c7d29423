// The client side of one SASL exchange, for a broker authenticating to
// another broker (inter-broker SASL, replication::LeaderConnection): PLAIN
// (RFC 4616) and SCRAM-SHA-256/512 (scram.h ScramClient). The caller
// carries the tokens in SaslAuthenticate requests. Not thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "broker/security/sasl/scram.h"
#include "headrace/status.h"

namespace headrace::broker::sasl {

// Whether `mechanism` has a client side here (PLAIN, SCRAM-SHA-256,
// SCRAM-SHA-512).
bool HasClientMechanism(std::string_view mechanism);

class SaslClient {
 public:
  // InvalidArgument for a mechanism without a client side.
  static Result<std::unique_ptr<SaslClient>> Create(const std::string& mechanism,
                                                    const std::string& user,
                                                    const std::string& password);
  // The first token.
  std::string Start();
  // The server's answer to the last token: the next token to send, or
  // `*done` = true when the exchange is complete (nothing more to send).
  // InvalidArgument when the server's answer is refused.
  Result<std::string> Step(std::string_view server_token, bool* done);
  const std::string& mechanism() const { return mechanism_; }

 private:
  SaslClient(std::string mechanism, std::string user, std::string password);
  const std::string mechanism_;
  const std::string user_;
  const std::string password_;
  std::unique_ptr<ScramClient> scram_;  // SCRAM only
  int step_ = 0;
};

}  // namespace headrace::broker::sasl
