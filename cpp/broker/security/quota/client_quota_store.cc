#include "broker/security/quota/client_quota_store.h"

#include <cmath>
#include <set>

#include "broker/base/json.h"
#include "common/logging.h"

namespace headrace::broker::quota {
namespace {

QuotaError Invalid(std::string message) { return {KafkaError::kInvalidRequest, std::move(message)}; }

// Kafka's quota keys of user / client-id entities; integral ones are LONG.
bool IsQuotaKey(const std::string& key) {
  return key == kProducerByteRate || key == kConsumerByteRate || key == kRequestPercentage ||
         key == kControllerMutationRate;
}
bool IsLongKey(const std::string& key) {
  return key == kProducerByteRate || key == kConsumerByteRate;
}

// Whether `part` (of an entity) satisfies filter component `f`.
bool Matches(const EntityPart& part, const QuotaFilterPart& f) {
  switch (f.match_type) {
    case 0: return part.kind == EntityPart::Kind::kName && part.name == *f.match;
    case 1: return part.kind == EntityPart::Kind::kDefault;
    default: return part.present();
  }
}

}  // namespace

QuotaError EntityFromWire(const std::vector<WireEntityPart>& parts, ClientQuotaEntity* out) {
  *out = {};
  if (parts.empty()) return Invalid("Invalid empty client quota entity");
  bool ip = false;
  for (const WireEntityPart& p : parts) {
    EntityPart* slot = nullptr;
    if (p.type == kUserType) {
      slot = &out->user;
    } else if (p.type == kClientIdType) {
      slot = &out->client_id;
    } else if (p.type == kIpType) {
      ip = true;
      continue;
    } else {
      return Invalid("Unhandled client quota entity type: " + p.type);
    }
    if (slot->present()) return Invalid("Duplicate " + p.type + " in client quota entity");
    if (p.name && p.name->empty()) return Invalid("Invalid empty " + p.type + " name");
    *slot = p.name ? EntityPart::Name(*p.name) : EntityPart::Default();
  }
  if (ip && (out->user.present() || out->client_id.present() || parts.size() > 1)) {
    return Invalid("Invalid quota entity combination, IP entity should not be combined with "
                   "User or ClientId");
  }
  if (ip) return Invalid("IP quotas (connection_creation_rate) are not supported by headrace");
  return {};
}

QuotaError ApplyOps(const std::vector<QuotaOp>& ops, QuotaValues* values) {
  std::set<std::string> seen;
  for (const QuotaOp& op : ops) {
    if (!seen.insert(op.key).second) return Invalid("Duplicate quota key " + op.key);
    if (!IsQuotaKey(op.key)) return Invalid("Invalid configuration key " + op.key);
    if (op.remove) {
      values->erase(op.key);
      continue;
    }
    if (!std::isfinite(op.value)) return Invalid("Quota " + op.key + " must be a finite number");
    if (IsLongKey(op.key)) {
      const double epsilon = 1e-6;
      const double whole = std::floor(op.value + epsilon);
      if (std::fabs(whole - op.value) > epsilon || std::fabs(op.value) > 9.2e18)
        return Invalid("Configuration " + op.key + " must be a Long value");
    }
    if (op.value <= 0) return Invalid("Quota " + op.key + " must be greater than 0");
    (*values)[op.key] = IsLongKey(op.key) ? std::nearbyint(op.value) : op.value;
  }
  return {};
}

QuotaError CheckFilter(const std::vector<QuotaFilterPart>& filter) {
  std::set<std::string> types;
  for (const QuotaFilterPart& f : filter) {
    if (f.entity_type != kUserType && f.entity_type != kClientIdType &&
        f.entity_type != kIpType) {
      return Invalid("Custom entity type '" + f.entity_type + "' not supported");
    }
    if (!types.insert(f.entity_type).second) {
      return Invalid("Duplicate filter component entity type " + f.entity_type);
    }
    if (f.match_type == 0 && !f.match) return Invalid("Exact match requires a match string");
    if (f.match_type == 1 && f.match) return Invalid("Default match must not name an entity");
    if (f.match_type == 2 && f.match) return Invalid("Specified match must not name an entity");
    if (f.match_type < 0 || f.match_type > 2) {
      return Invalid("Unexpected match type " + std::to_string(f.match_type));
    }
  }
  if (types.count(kIpType) && types.size() > 1) {
    return Invalid("Invalid entity filter component combination, IP filter component should "
                   "not be used with User or ClientId filter component.");
  }
  return {};
}

std::vector<QuotaEntry> SelectEntries(const QuotaTable& table,
                                      const std::vector<QuotaFilterPart>& filter, bool strict) {
  std::vector<QuotaEntry> out;
  for (const auto& [path, entry] : table) {
    bool ok = true;
    bool user_named = false, client_named = false;
    for (const QuotaFilterPart& f : filter) {
      if (f.entity_type == kIpType) {
        ok = false;  // no IP entities are kept
      } else if (f.entity_type == kUserType) {
        ok = ok && Matches(entry.entity.user, f);
        user_named = true;
      } else {
        ok = ok && Matches(entry.entity.client_id, f);
        client_named = true;
      }
    }
    if (strict) {  // the entity has no component the filter leaves out
      ok = ok && (user_named || !entry.entity.user.present()) &&
           (client_named || !entry.entity.client_id.present());
    }
    if (ok) out.push_back(entry);
  }
  return out;
}

// --- the store ----------------------------------------------------------------

Result<std::unique_ptr<ClientQuotaStore>> ClientQuotaStore::Open(const std::string& data_dir,
                                                                 FileEnv* env) {
  std::unique_ptr<ClientQuotaStore> s(
      new ClientQuotaStore(data_dir, env ? env : FileEnv::Default()));
  if (data_dir.empty()) return s;
  HR_ASSIGN_OR_RETURN(std::optional<std::string> text,
                      ReadFileIfExists(*s->env_, data_dir + "/" + kFileName));
  if (!text) return s;
  auto table = Decode(*text);
  if (!table.ok()) return Status::Corruption(std::string(kFileName) + ": " + table.status().message());
  s->table_ = std::make_shared<QuotaTable>(std::move(table).value());
  return s;
}

std::shared_ptr<const QuotaTable> ClientQuotaStore::table() const {
  std::lock_guard<std::mutex> l(snapshot_mu_);
  return table_;
}

Status ClientQuotaStore::Apply(const std::vector<QuotaEntry>& changes) {
  std::lock_guard<std::mutex> l(mu_);
  auto next = std::make_shared<QuotaTable>(*table());
  for (const QuotaEntry& c : changes) {
    const std::string path = c.entity.Path();
    if (c.values.empty()) next->erase(path);
    else (*next)[path] = c;
  }
  return PersistAndPublish(std::move(next));
}

Status ClientQuotaStore::ReplaceAll(QuotaTable next) {
  std::lock_guard<std::mutex> l(mu_);
  const std::shared_ptr<const QuotaTable> current = table();
  const QuotaTable& now = *current;
  bool same = now.size() == next.size();
  auto b = next.cbegin();
  for (auto a = now.begin(); same && a != now.end(); ++a, ++b) {
    same = a->first == b->first && a->second.values == b->second.values;
  }
  if (same) return Status::OK();
  return PersistAndPublish(std::make_shared<QuotaTable>(std::move(next)));
}

Status ClientQuotaStore::PersistAndPublish(std::shared_ptr<const QuotaTable> next) {
  if (!dir_.empty()) HR_RETURN_IF_ERROR(WriteFileAtomically(*env_, dir_, kFileName, Encode(*next)));
  {
    std::lock_guard<std::mutex> l(snapshot_mu_);
    table_ = std::move(next);
  }
  version_.fetch_add(1, std::memory_order_acq_rel);
  return Status::OK();
}

std::string ClientQuotaStore::Encode(const QuotaTable& table) {
  json::Object quotas;
  for (const auto& [path, entry] : table) {
    json::Object values;
    for (const auto& [key, value] : entry.values) values[key] = FormatQuotaValue(key, value);
    quotas[path] = std::move(values);
  }
  json::Object root;
  root["version"] = json::Value(int64_t{1});
  root["quotas"] = std::move(quotas);
  return json::Write(json::Value(std::move(root)));
}

Result<QuotaTable> ClientQuotaStore::Decode(std::string_view text) {
  HR_ASSIGN_OR_RETURN(json::Value root, json::Parse(text));
  const json::Value* version = root.Find("version");
  if (version == nullptr || !version->is_int() || version->as_int() != 1) {
    return Status::Corruption("unsupported version (expected 1)");
  }
  QuotaTable table;
  const json::Value* quotas = root.Find("quotas");
  if (quotas == nullptr || !quotas->is_object()) return table;
  for (const auto& [path, values] : quotas->as_object()) {
    auto entity = ClientQuotaEntity::FromPath(path);
    if (!entity.ok() || !values.is_object()) {
      HR_LOG(kWarn) << kFileName << ": ignoring entry '" << path << "'";
      continue;
    }
    QuotaEntry entry{*entity, {}};
    for (const auto& [key, value] : values.as_object()) {
      auto v = value.is_string() ? ParseQuotaValue(value.as_string())
                                 : Result<double>(Status::InvalidArgument("not a string"));
      if (!v.ok() || !IsQuotaKey(key)) {
        HR_LOG(kWarn) << kFileName << ": ignoring " << path << " " << key;
        continue;
      }
      entry.values[key] = *v;
    }
    if (!entry.values.empty()) table[path] = std::move(entry);
  }
  return table;
}

}  // namespace headrace::broker::quota
