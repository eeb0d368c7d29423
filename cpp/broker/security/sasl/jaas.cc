#include "broker/security/sasl/jaas.h"

#include <cctype>
#include <vector>

namespace headrace::broker::sasl {
namespace {

class Lexer {
 public:
  explicit Lexer(std::string_view s) : s_(s) {}
  void SkipSpace() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool AtEnd() { SkipSpace(); return pos_ >= s_.size(); }
  bool Consume(char c) {
    SkipSpace();
    if (pos_ < s_.size() && s_[pos_] == c) { ++pos_; return true; }
    return false;
  }
  // A bare word: anything up to space, '=', ';' or '"'.
  std::string Word() {
    SkipSpace();
    size_t start = pos_;
    while (pos_ < s_.size() && !std::isspace(static_cast<unsigned char>(s_[pos_])) &&
           s_[pos_] != '=' && s_[pos_] != ';' && s_[pos_] != '"')
      ++pos_;
    return std::string(s_.substr(start, pos_ - start));
  }
  // A quoted value (after the opening quote was seen) or a bare word.
  Result<std::string> Value() {
    SkipSpace();
    if (pos_ >= s_.size() || s_[pos_] != '"') return Word();
    ++pos_;
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      if (s_[pos_] == '\\' && pos_ + 1 < s_.size()) ++pos_;
      out += s_[pos_++];
    }
    if (pos_ >= s_.size()) return Status::InvalidArgument("sasl.jaas.config: unterminated quote");
    ++pos_;
    return out;
  }

 private:
  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace

Result<std::vector<JaasModule>> ParseJaasConfig(std::string_view text) {
  std::vector<JaasModule> modules;
  Lexer lex(text);
  while (!lex.AtEnd()) {
    JaasModule m;
    m.login_module = lex.Word();
    m.flag = lex.Word();
    if (m.login_module.empty() || m.flag.empty())
      return Status::InvalidArgument("sasl.jaas.config: expected '<LoginModule> <flag> ...;'");
    if (m.flag != "required" && m.flag != "requisite" && m.flag != "sufficient" &&
        m.flag != "optional")
      return Status::InvalidArgument("sasl.jaas.config: bad control flag '" + m.flag + "'");
    while (!lex.Consume(';')) {
      if (lex.AtEnd()) return Status::InvalidArgument("sasl.jaas.config: missing ';'");
      std::string key = lex.Word();
      if (key.empty() || !lex.Consume('='))
        return Status::InvalidArgument("sasl.jaas.config: expected key=value after '" +
                                       m.login_module + "'");
      HR_ASSIGN_OR_RETURN(std::string value, lex.Value());
      m.options[key] = std::move(value);
    }
    modules.push_back(std::move(m));
  }
  return modules;
}

std::map<std::string, std::string> PlainUsers(const std::vector<JaasModule>& modules) {
  std::map<std::string, std::string> users;
  for (const JaasModule& m : modules)
    for (const auto& [k, v] : m.options)
      if (k.size() > 5 && k.compare(0, 5, "user_") == 0) users[k.substr(5)] = v;
  return users;
}

Result<JaasLogin> LoginCredentials(const std::vector<JaasModule>& modules) {
  for (const JaasModule& m : modules) {
    auto user = m.options.find("username");
    if (user == m.options.end()) continue;
    auto password = m.options.find("password");
    if (password == m.options.end())
      return Status::InvalidArgument("sasl.jaas.config: " + m.login_module +
                                     " has a username but no password");
    return JaasLogin{user->second, password->second};
  }
  return Status::InvalidArgument("sasl.jaas.config: no login module with username=\"...\" "
                                 "password=\"...\"");
}

}  // namespace headrace::broker::sasl
