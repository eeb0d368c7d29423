#include "broker/security/quota/cluster_quotas.h"

#include "broker/base/json.h"
#include "common/logging.h"

namespace headrace::broker::quota {

void ApplyClusterQuotas(std::string_view state_json, ClientQuotaStore* store) {
  auto root = json::Parse(state_json);
  if (!root.ok()) return;  // the cluster view's parser reports it
  const json::Value* quotas = root->Find("client_quotas");
  if (quotas == nullptr || !quotas->is_object()) return;
  json::Object wrapped{{"version", json::Value(int64_t{1})}, {"quotas", *quotas}};
  auto table = ClientQuotaStore::Decode(json::Write(json::Value(std::move(wrapped))));
  if (!table.ok()) {
    HR_LOG(kWarn) << "cluster state: client quotas: " << table.status().message();
    return;
  }
  if (Status st = store->ReplaceAll(std::move(table).value()); !st.ok()) {
    HR_LOG(kWarn) << "cluster state: client quotas not saved: " << st.message();
  }
}

}  // namespace headrace::broker::quota
