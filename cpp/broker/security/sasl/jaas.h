// The part of a JAAS configuration (Kafka's `sasl.jaas.config` value) the
// broker reads: the options of its login modules, e.g.
//   org.apache.kafka.common.security.plain.PlainLoginModule required
//     username="admin" password="admin-secret" user_alice="alice-secret";
// PLAIN's users are the `user_<name>="<password>"` options, as Kafka's
// PlainServerCallbackHandler reads them.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "headrace/status.h"

namespace headrace::broker::sasl {

struct JaasModule {
  std::string login_module;  // class name
  std::string flag;          // required / requisite / sufficient / optional
  std::map<std::string, std::string> options;
};

// Every module of `text` ("<class> <flag> key=value ...;" repeated; values
// quoted with '"' (with \" and \\ escapes) or bare). InvalidArgument naming
// the problem otherwise.
Result<std::vector<JaasModule>> ParseJaasConfig(std::string_view text);

// user name -> password from the `user_<name>` options of every module.
std::map<std::string, std::string> PlainUsers(const std::vector<JaasModule>& modules);

// The credentials a broker logs in to other brokers with: the `username`
// and `password` options of the first module that has a `username` (as
// Kafka's PLAIN and SCRAM login modules read them). InvalidArgument when
// no module has one, or it has no password.
struct JaasLogin {
  std::string username;
  std::string password;
};
Result<JaasLogin> LoginCredentials(const std::vector<JaasModule>& modules);

}  // namespace headrace::broker::sasl
