#include "broker/replication/isr_changes.h"

namespace headrace::broker::replication {

std::vector<IsrChange> CollectIsrChanges(const std::vector<std::shared_ptr<Partition>>& leaders,
                                         int64_t now_ms, int64_t lag_time_max_ms) {
  std::vector<IsrChange> out;
  for (const auto& p : leaders) {
    if (!p) continue;
    const LeaderEpoch epoch = p->leader_epoch();
    std::map<int32_t, int64_t> fetch_epochs;
    std::optional<std::vector<int32_t>> isr = p->ProposeIsr(now_ms, lag_time_max_ms, &fetch_epochs);
    if (!isr) continue;
    out.push_back({p->topic(), p->partition(), epoch.value(), std::move(*isr),
                   std::move(fetch_epochs)});
  }
  return out;
}

}  // namespace headrace::broker::replication
