// A client quota entity (KIP-55/KIP-546): a user, a client id, or a user
// and a client id, each either a name or the default ("<default>"), and
// the quota values set on it. Entities are named by Kafka's ZooKeeper
// paths relative to /config, with names sanitised as Kafka's Sanitizer
// does (URL encoding; "*" as %2A): "users/<u>", "users/<u>/clients/<c>",
// "clients/<c>" — the same string is the key of the single-node file
// (docs/metadata-format.md) and the znode under /config in a cluster.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "headrace/status.h"

namespace headrace::broker::quota {

// Kafka's entity types and quota keys (ClientQuotaEntity, QuotaConfig).
inline constexpr const char* kUserType = "user";
inline constexpr const char* kClientIdType = "client-id";
inline constexpr const char* kIpType = "ip";
inline constexpr const char* kDefaultName = "<default>";
inline constexpr const char* kProducerByteRate = "producer_byte_rate";
inline constexpr const char* kConsumerByteRate = "consumer_byte_rate";
inline constexpr const char* kRequestPercentage = "request_percentage";
inline constexpr const char* kControllerMutationRate = "controller_mutation_rate";

struct EntityPart {
  enum class Kind { kAbsent, kDefault, kName };
  Kind kind = Kind::kAbsent;
  std::string name;  // kName only

  bool present() const { return kind != Kind::kAbsent; }
  static EntityPart Default() { return {Kind::kDefault, {}}; }
  static EntityPart Name(std::string n) { return {Kind::kName, std::move(n)}; }
  bool operator==(const EntityPart&) const = default;
};

struct ClientQuotaEntity {
  EntityPart user;
  EntityPart client_id;

  // "users/alice", "users/<default>/clients/app", "clients/%2A", ...
  // REQUIRES: at least one part present.
  std::string Path() const;
  // The inverse of Path; InvalidArgument for anything else.
  static Result<ClientQuotaEntity> FromPath(std::string_view path);
  bool operator==(const ClientQuotaEntity&) const = default;
};

// Key -> value (Kafka keeps them as doubles on the wire).
using QuotaValues = std::map<std::string, double>;

// Kafka's Sanitizer: URL encoding of everything but [A-Za-z0-9._-~] ("*"
// included, as %2A; a space as %20).
std::string SanitizeName(std::string_view name);
Result<std::string> DesanitizeName(std::string_view sanitized);

// A value as Kafka writes it into ZooKeeper: integral keys without a
// fraction ("1048576"), request_percentage as a double ("50.0").
std::string FormatQuotaValue(const std::string& key, double value);
Result<double> ParseQuotaValue(std::string_view text);

}  // namespace headrace::broker::quota
