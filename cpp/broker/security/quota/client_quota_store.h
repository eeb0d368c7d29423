// ClientQuotaStore: the client quotas set through AlterClientQuotas, with
// Kafka's checks, the DescribeClientQuotas filter, and their durability.
//
// Persistence (single node): <data_dir>/client-quotas.json,
//   {"version": 1, "quotas": {"<entity path>": {"<key>": "<value>"}}}
// with entity paths and value strings as Kafka's ZooKeeper layout has them
// (client_quota_entity.h; docs/metadata-format.md); replaced atomically
// (WriteFileAtomically) before a change is published or answered, read at
// start. Cluster mode: ZooKeeper's /config/users and /config/clients are
// the source; the control plane hands the whole table to ReplaceAll with
// every cluster state, and the file is this broker's copy of it.
//
// Threading: thread-safe. Readers take a snapshot (table()) without
// blocking writers; changes are serialised by `mu_`, and `version()` grows
// with each published table.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "broker/base/kafka_error.h"
#include "broker/security/quota/client_quota_entity.h"
#include "common/file_env.h"
#include "headrace/status.h"

namespace headrace::broker::quota {

struct QuotaEntry {
  ClientQuotaEntity entity;
  QuotaValues values;  // never empty in a table
};
// Entity path -> entry.
using QuotaTable = std::map<std::string, QuotaEntry>;

// One entity component as on the wire (name nullopt = the default).
struct WireEntityPart {
  std::string type;
  std::optional<std::string> name;
};
struct QuotaOp {
  std::string key;
  double value = 0;
  bool remove = false;
};
// A Kafka error for one request entry: code and message.
struct QuotaError {
  KafkaError code = KafkaError::kNone;
  std::string message;
  bool ok() const { return code == KafkaError::kNone; }
};

// Kafka's entity checks of AlterClientQuotas (INVALID_REQUEST otherwise).
QuotaError EntityFromWire(const std::vector<WireEntityPart>& parts, ClientQuotaEntity* out);
// Applies `ops` to `values` with Kafka's key and value checks.
QuotaError ApplyOps(const std::vector<QuotaOp>& ops, QuotaValues* values);

// One DescribeClientQuotas filter component (match_type 0 exact name,
// 1 the default, 2 any specified name).
struct QuotaFilterPart {
  std::string entity_type;
  int8_t match_type = 0;
  std::optional<std::string> match;
};
// Kafka's checks of a filter; then the entries it selects.
QuotaError CheckFilter(const std::vector<QuotaFilterPart>& filter);
std::vector<QuotaEntry> SelectEntries(const QuotaTable& table,
                                      const std::vector<QuotaFilterPart>& filter, bool strict);

class ClientQuotaStore {
 public:
  static constexpr const char* kFileName = "client-quotas.json";

  // Reads the file in `data_dir` ("" = memory only; none = no quotas).
  // `env` null = the OS; it must outlive this object.
  static Result<std::unique_ptr<ClientQuotaStore>> Open(const std::string& data_dir, FileEnv* env);

  std::shared_ptr<const QuotaTable> table() const;
  uint64_t version() const { return version_.load(std::memory_order_acquire); }

  // Sets each entity's values (empty: removes the entity), persists, then
  // publishes. Errors: KAFKA_STORAGE_ERROR-worthy IOError from the write.
  Status Apply(const std::vector<QuotaEntry>& changes);
  // Cluster mode: the whole table from ZooKeeper (no-op when unchanged).
  Status ReplaceAll(QuotaTable next);

  static std::string Encode(const QuotaTable& table);
  static Result<QuotaTable> Decode(std::string_view text);

 private:
  ClientQuotaStore(std::string dir, FileEnv* env) : dir_(std::move(dir)), env_(env) {}
  Status PersistAndPublish(std::shared_ptr<const QuotaTable> next);  // REQUIRES: mu_ held

  const std::string dir_;
  FileEnv* const env_;
  std::mutex mu_;  // serialises changes
  mutable std::mutex snapshot_mu_;  // guards table_ (the pointer, not the table)
  std::shared_ptr<const QuotaTable> table_ = std::make_shared<QuotaTable>();
  std::atomic<uint64_t> version_{1};
};

}  // namespace headrace::broker::quota
