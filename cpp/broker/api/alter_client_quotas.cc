// AlterClientQuotas (key 49), v0..1: sets or removes producer_byte_rate,
// consumer_byte_rate, request_percentage (and controller_mutation_rate,
// stored but not enforced) on user / client-id entities (docs/security.md
// "Quotas"). Each entry is checked and applied on its own with Kafka's
// errors (INVALID_REQUEST: empty, duplicate or unknown entity types, IP
// entities, unknown keys, a fractional byte rate, a value <= 0).
// validate_only checks without changing anything. Single node: the change
// is durable (client-quotas.json) before it is answered; cluster mode: the
// control plane writes it to ZooKeeper (/config/users, /config/clients)
// and every broker applies it with the next cluster state.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "broker/api/authorize.h"
#include "broker/api/cluster_admin.h"
#include "broker/api/handler.h"
#include "broker/cluster/cluster_state.h"
#include "broker/base/json.h"
#include "broker/base/kafka_error.h"
#include "broker/security/quota/client_quota_store.h"

namespace headrace::broker {
namespace {

using Req = protocol::AlterClientQuotasRequest;
using Resp = protocol::AlterClientQuotasResponse;

// Cluster mode: the control plane writes /config/<path> (values as Kafka
// strings; no values: the znode is removed). Blocks the admin worker.
quota::QuotaError AlterInCluster(const BrokerContext& ctx, const quota::QuotaEntry& entry) {
  json::Object configs;
  for (const auto& [k, v] : entry.values) configs[k] = json::Value(quota::FormatQuotaValue(k, v));
  Status st = CallControlPlane(ctx, "alter_client_quotas",
                               json::Object{{"path", entry.entity.Path()},
                                            {"configs", json::Value(std::move(configs))}});
  if (st.ok()) return {};
  return {ToKafkaError(st), st.message()};
}

quota::QuotaError AlterOne(BrokerContext& ctx, const Req::EntryData& in, bool validate_only) {
  if (ctx.client_quotas == nullptr) return {KafkaError::kUnknownServerError, "quotas not ready"};
  std::vector<quota::WireEntityPart> parts;
  for (const auto& e : in.entity) parts.push_back({e.entity_type, e.entity_name});
  quota::QuotaEntry entry;
  if (auto err = quota::EntityFromWire(parts, &entry.entity); !err.ok()) return err;
  auto table = ctx.client_quotas->table();
  if (auto it = table->find(entry.entity.Path()); it != table->end()) entry.values = it->second.values;
  std::vector<quota::QuotaOp> ops;
  for (const auto& op : in.ops) ops.push_back({op.key, op.value, op.remove});
  if (auto err = quota::ApplyOps(ops, &entry.values); !err.ok()) return err;
  if (validate_only) return {};
  if (ctx.state->cluster() != nullptr) return AlterInCluster(ctx, entry);
  Status st = ctx.client_quotas->Apply({entry});
  if (!st.ok()) return {KafkaError::kKafkaStorageError, st.message()};
  return {};
}

void HandleAlterClientQuotas(BrokerContext& ctx, Req& req, Request request) {
  Resp resp;
  for (const Req::EntryData& in : req.entries) {
    Resp::EntryData& out = resp.entries.emplace_back();
    for (const auto& e : in.entity) out.entity.push_back({e.entity_type, e.entity_name});
    // Kafka: ALTER_CONFIGS on the CLUSTER.
    quota::QuotaError err =
        AuthorizedOnCluster(ctx, request, AclOperation::kAlterConfigs)
            ? AlterOne(ctx, in, req.validate_only)
            : quota::QuotaError{KafkaError::kClusterAuthorizationFailed,
                                "Cluster authorization failed."};
    out.error_code = Code(err.code);
    out.error_message = err.ok() ? std::nullopt : std::optional<std::string>(err.message);
  }
  request.Reply(resp);
}

}  // namespace

extern const ApiHandler kAlterClientQuotasHandler =
    MakeHandler<Req, OnAdminWorker<Req, HandleAlterClientQuotas>>(0, 1);

}  // namespace headrace::broker
