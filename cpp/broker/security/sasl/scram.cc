#include "broker/security/sasl/scram.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <atomic>
#include <charconv>
#include <vector>

#include "broker/security/sasl/base64.h"

namespace headrace::broker::sasl {
namespace {

const EVP_MD* Digest(ScramMechanism m) {
  return m == ScramMechanism::kSha512 ? EVP_sha512() : EVP_sha256();
}

std::string Hmac(ScramMechanism m, std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(Digest(m), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
  return std::string(reinterpret_cast<char*>(out), len);
}

std::string Hash(ScramMechanism m, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), out, &len, Digest(m), nullptr);
  return std::string(reinterpret_cast<char*>(out), len);
}

// Splits "a=1,b=2" into attributes; false when an item is not "x=...".
bool SplitAttributes(std::string_view msg, std::vector<std::pair<char, std::string_view>>* out) {
  size_t pos = 0;
  while (pos <= msg.size()) {
    size_t comma = msg.find(',', pos);
    std::string_view item = msg.substr(pos, comma == std::string_view::npos ? msg.npos : comma - pos);
    if (item.size() < 2 || item[1] != '=') return false;
    out->emplace_back(item[0], item.substr(2));
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return true;
}

// RFC 5802 saslname: "=2C" -> ",", "=3D" -> "="; nullopt on another '='.
std::optional<std::string> DecodeSaslName(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '=') {
      out += s[i];
      continue;
    }
    if (s.substr(i, 3) == "=2C") out += ',';
    else if (s.substr(i, 3) == "=3D") out += '=';
    else return std::nullopt;
    i += 2;
  }
  return out;
}

std::string RandomNonce() {
  unsigned char raw[24];
  if (RAND_bytes(raw, sizeof raw) != 1) {
    // No entropy: fall back to something unique per exchange rather than
    // failing; the nonce only has to be fresh, the secret is the key.
    static std::atomic<uint64_t> n{0};
    return "headrace-" + std::to_string(++n);
  }
  // Alphanumeric, as Kafka's ScramFormatter: some clients mishandle nonces
  // with '=' or '+' (librdkafka 1.9's kcat fails the final message).
  static constexpr char kDigits[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  std::string out;
  for (unsigned char b : raw) out += kDigits[b % 62];
  return out;
}

Status Invalid(const std::string& why) { return Status::InvalidArgument(why); }

// RFC 5802 saslname: ',' -> "=2C", '=' -> "=3D".
std::string EncodeSaslName(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == ',') out += "=2C";
    else if (c == '=') out += "=3D";
    else out += c;
  }
  return out;
}

}  // namespace

const char* ScramMechanismName(ScramMechanism m) {
  switch (m) {
    case ScramMechanism::kSha256: return "SCRAM-SHA-256";
    case ScramMechanism::kSha512: return "SCRAM-SHA-512";
    default: return "UNKNOWN";
  }
}

ScramMechanism ScramMechanismFromName(std::string_view name) {
  if (name == "SCRAM-SHA-256") return ScramMechanism::kSha256;
  if (name == "SCRAM-SHA-512") return ScramMechanism::kSha512;
  return ScramMechanism::kUnknown;
}

ScramMechanism ScramMechanismFromId(int8_t id) {
  if (id == 1) return ScramMechanism::kSha256;
  if (id == 2) return ScramMechanism::kSha512;
  return ScramMechanism::kUnknown;
}

std::string SaltPassword(ScramMechanism m, std::string_view password, std::string_view salt,
                         int32_t iterations) {
  std::string out(EVP_MD_get_size(Digest(m)), '\0');
  PKCS5_PBKDF2_HMAC(password.data(), static_cast<int>(password.size()),
                    reinterpret_cast<const unsigned char*>(salt.data()),
                    static_cast<int>(salt.size()), iterations, Digest(m),
                    static_cast<int>(out.size()), reinterpret_cast<unsigned char*>(out.data()));
  return out;
}

ScramCredential CredentialFromSaltedPassword(ScramMechanism m, std::string_view salted_password,
                                             std::string_view salt, int32_t iterations) {
  ScramCredential c;
  c.salt = std::string(salt);
  c.stored_key = Hash(m, Hmac(m, salted_password, "Client Key"));
  c.server_key = Hmac(m, salted_password, "Server Key");
  c.iterations = iterations;
  return c;
}

std::string FormatScramCredential(const ScramCredential& c) {
  return "salt=" + Base64Encode(c.salt) + ",stored_key=" + Base64Encode(c.stored_key) +
         ",server_key=" + Base64Encode(c.server_key) + ",iterations=" + std::to_string(c.iterations);
}

Result<ScramCredential> ParseScramCredential(std::string_view text) {
  ScramCredential c;
  bool salt = false, stored = false, server = false, iters = false;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t comma = text.find(',', pos);
    std::string_view item = text.substr(pos, comma == text.npos ? text.npos : comma - pos);
    pos = comma == text.npos ? text.size() : comma + 1;
    size_t eq = item.find('=');
    if (eq == item.npos) return Status::Corruption("SCRAM credential: bad item '" + std::string(item) + "'");
    std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "iterations") {
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), c.iterations);
      if (ec != std::errc() || p != value.data() + value.size() || c.iterations <= 0)
        return Status::Corruption("SCRAM credential: bad iterations");
      iters = true;
      continue;
    }
    std::optional<std::string> bytes = Base64Decode(value);
    if (!bytes) return Status::Corruption("SCRAM credential: bad base64 in " + std::string(key));
    if (key == "salt") { c.salt = *bytes; salt = true; }
    else if (key == "stored_key") { c.stored_key = *bytes; stored = true; }
    else if (key == "server_key") { c.server_key = *bytes; server = true; }
  }
  if (!salt || !stored || !server || !iters)
    return Status::Corruption("SCRAM credential: needs salt, stored_key, server_key, iterations");
  return c;
}

ScramServer::ScramServer(ScramMechanism m, Lookup lookup, std::string server_nonce)
    : mech_(m), lookup_(std::move(lookup)), server_nonce_(std::move(server_nonce)) {}

Status ScramServer::Step(std::string_view msg, std::string* response) {
  Status st;
  switch (state_) {
    case State::kClientFirst: st = ClientFirst(msg, response); break;
    case State::kClientFinal: st = ClientFinal(msg, response); break;
    default: st = Invalid("Authentication failed: unexpected SCRAM message"); break;
  }
  if (!st.ok()) state_ = State::kFailed;
  return st;
}

Status ScramServer::ClientFirst(std::string_view msg, std::string* response) {
  // gs2-header: "n,," or "n,a=<authzid>," (no channel binding, as Kafka).
  if (msg.size() < 3 || msg[0] != 'n' || msg[1] != ',')
    return Invalid("Authentication failed: invalid SCRAM client first message (channel binding "
                   "is not supported)");
  size_t second = msg.find(',', 2);
  if (second == msg.npos) return Invalid("Authentication failed: invalid SCRAM client first message");
  std::string_view authzid = msg.substr(2, second - 2);
  gs2_header_ = std::string(msg.substr(0, second + 1));
  client_first_bare_ = std::string(msg.substr(second + 1));
  std::vector<std::pair<char, std::string_view>> attrs;
  if (!SplitAttributes(client_first_bare_, &attrs) || attrs.size() < 2 || attrs[0].first != 'n' ||
      attrs[1].first != 'r' || attrs[1].second.empty())
    return Invalid("Authentication failed: invalid SCRAM client first message");
  if (attrs.size() > 2)  // Kafka's only extension is for delegation tokens (tokenauth=true)
    return Invalid("Authentication failed: SCRAM extensions are not supported");
  std::optional<std::string> user = DecodeSaslName(attrs[0].second);
  if (!user || user->empty()) return Invalid("Authentication failed: invalid SCRAM user name");
  if (!authzid.empty()) {
    std::optional<std::string> az = authzid.substr(0, 2) == "a=" ? DecodeSaslName(authzid.substr(2))
                                                                 : std::nullopt;
    if (!az || *az != *user)
      return Invalid("Authentication failed: Client requested an authorization id that is "
                     "different from username");
  }
  std::optional<ScramCredential> cred = lookup_(*user);
  if (!cred) return Invalid("Authentication failed: Invalid user credentials");
  user_ = *user;
  cred_ = std::move(*cred);
  nonce_ = std::string(attrs[1].second) + (server_nonce_.empty() ? RandomNonce() : server_nonce_);
  server_first_ = "r=" + nonce_ + ",s=" + Base64Encode(cred_.salt) +
                  ",i=" + std::to_string(cred_.iterations);
  *response = server_first_;
  state_ = State::kClientFinal;
  return Status::OK();
}

Status ScramServer::ClientFinal(std::string_view msg, std::string* response) {
  const Status bad = Invalid("Authentication failed: invalid SCRAM client final message");
  size_t proof_at = msg.rfind(",p=");
  if (proof_at == msg.npos) return bad;
  std::string_view without_proof = msg.substr(0, proof_at);
  std::vector<std::pair<char, std::string_view>> attrs;
  if (!SplitAttributes(without_proof, &attrs) || attrs.size() < 2 || attrs[0].first != 'c' ||
      attrs[1].first != 'r')
    return bad;
  std::optional<std::string> binding = Base64Decode(attrs[0].second);
  if (!binding || *binding != gs2_header_) return bad;
  // RFC 5802 wants server-first's nonce back. Like Kafka 3.8.1+/3.9 (its
  // CVE-2024-56128 fix compares with endsWith), a nonce that ends with it is
  // accepted: librdkafka before 2.6.1 sends the client nonce twice (Debian's
  // kcat links 2.0.2).
  const std::string_view nonce = attrs[1].second;
  if (nonce.size() < nonce_.size() || nonce.substr(nonce.size() - nonce_.size()) != nonce_)
    return Invalid("Authentication failed: Invalid SCRAM nonce");
  std::optional<std::string> proof = Base64Decode(msg.substr(proof_at + 3));
  if (!proof || proof->size() != cred_.stored_key.size()) return bad;

  const std::string auth_message =
      client_first_bare_ + "," + server_first_ + "," + std::string(without_proof);
  const std::string client_signature = Hmac(mech_, cred_.stored_key, auth_message);
  std::string client_key(proof->size(), '\0');
  for (size_t i = 0; i < client_key.size(); ++i) client_key[i] = (*proof)[i] ^ client_signature[i];
  const std::string stored = Hash(mech_, client_key);
  if (stored.size() != cred_.stored_key.size() ||
      CRYPTO_memcmp(stored.data(), cred_.stored_key.data(), stored.size()) != 0)
    return Invalid("Authentication failed: Invalid user credentials");
  *response = "v=" + Base64Encode(Hmac(mech_, cred_.server_key, auth_message));
  state_ = State::kDone;
  return Status::OK();
}


ScramClient::ScramClient(ScramMechanism m, std::string user, std::string password,
                         std::string client_nonce)
    : mech_(m),
      user_(std::move(user)),
      password_(std::move(password)),
      nonce_(client_nonce.empty() ? RandomNonce() : std::move(client_nonce)) {}

std::string ScramClient::ClientFirst() {
  client_first_bare_ = "n=" + EncodeSaslName(user_) + ",r=" + nonce_;
  return "n,," + client_first_bare_;
}

Result<std::string> ScramClient::ClientFinal(std::string_view server_first) {
  std::vector<std::pair<char, std::string_view>> attrs;
  if (!SplitAttributes(server_first, &attrs) || attrs.size() < 3 || attrs[0].first != 'r' ||
      attrs[1].first != 's' || attrs[2].first != 'i')
    return Invalid("invalid SCRAM server first message");
  const std::string_view nonce = attrs[0].second;
  if (nonce.size() <= nonce_.size() || nonce.substr(0, nonce_.size()) != nonce_)
    return Invalid("SCRAM server nonce does not extend the client nonce");
  std::optional<std::string> salt = Base64Decode(attrs[1].second);
  int32_t iterations = 0;
  auto [p, ec] = std::from_chars(attrs[2].second.data(),
                                 attrs[2].second.data() + attrs[2].second.size(), iterations);
  if (!salt || ec != std::errc() || p != attrs[2].second.data() + attrs[2].second.size())
    return Invalid("invalid SCRAM server first message");
  if (iterations < kScramMinIterations)
    return Invalid("SCRAM iterations " + std::to_string(iterations) + " below the minimum " +
                   std::to_string(kScramMinIterations));
  salted_password_ = SaltPassword(mech_, password_, *salt, iterations);
  const std::string without_proof = "c=" + Base64Encode("n,,") + ",r=" + std::string(nonce);
  auth_message_ = client_first_bare_ + "," + std::string(server_first) + "," + without_proof;
  const std::string client_key = Hmac(mech_, salted_password_, "Client Key");
  const std::string signature = Hmac(mech_, Hash(mech_, client_key), auth_message_);
  std::string proof(client_key.size(), '\0');
  for (size_t i = 0; i < proof.size(); ++i) proof[i] = client_key[i] ^ signature[i];
  return without_proof + ",p=" + Base64Encode(proof);
}

Status ScramClient::VerifyServerFinal(std::string_view server_final) {
  if (server_final.substr(0, 2) == "e=")
    return Invalid("SCRAM server error: " + std::string(server_final.substr(2)));
  if (server_final.substr(0, 2) != "v=" || salted_password_.empty())
    return Invalid("invalid SCRAM server final message");
  std::optional<std::string> got = Base64Decode(server_final.substr(2));
  const std::string want = Hmac(mech_, Hmac(mech_, salted_password_, "Server Key"), auth_message_);
  if (!got || got->size() != want.size() ||
      CRYPTO_memcmp(got->data(), want.data(), want.size()) != 0)
    return Invalid("SCRAM server signature does not match (the server does not hold this "
                   "user's credential)");
  return Status::OK();
}

}  // namespace headrace::broker::sasl
