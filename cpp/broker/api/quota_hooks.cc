#include "broker/api/quota_hooks.h"

#include <algorithm>
#include <string>

#include "broker/security/quota/quota_manager.h"

namespace headrace::broker {

using quota::QuotaKind;

void ThrottleProduce(BrokerContext& ctx, Request& req) {
  quota::QuotaManager* q = ctx.quotas;
  if (q == nullptr || !q->Enabled(QuotaKind::kProduce)) return;
  req.AddThrottle(q->Record(QuotaKind::kProduce, quota::UserOfPrincipal(req.session().principal),
                            req.client_id(), static_cast<double>(req.frame_bytes())));
}

int32_t CapFetchMaxBytes(BrokerContext& ctx, const Request& req, int32_t max_bytes) {
  quota::QuotaManager* q = ctx.quotas;
  if (q == nullptr || !q->Enabled(QuotaKind::kFetch)) return max_bytes;
  int64_t cap = q->MaxValueInWindow(QuotaKind::kFetch,
                                    quota::UserOfPrincipal(req.session().principal),
                                    req.client_id());
  return static_cast<int32_t>(std::min<int64_t>(max_bytes, cap));
}

bool ThrottleFetch(BrokerContext& ctx, Request& req, int64_t bytes) {
  quota::QuotaManager* q = ctx.quotas;
  if (q == nullptr || !q->Enabled(QuotaKind::kFetch)) return req.throttle_ms() > 0;
  const std::string_view user = quota::UserOfPrincipal(req.session().principal);
  const auto value = static_cast<double>(bytes);
  req.AddThrottle(q->Record(QuotaKind::kFetch, user, req.client_id(), value));
  if (req.throttle_ms() == 0) return false;
  q->Unrecord(QuotaKind::kFetch, user, req.client_id(), value);  // answered without them
  return true;
}

}  // namespace headrace::broker
