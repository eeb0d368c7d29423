#include "broker/replication/cluster_apply.h"

#include <algorithm>

#include "common/logging.h"

namespace headrace::broker {
namespace {

bool Contains(const std::vector<int32_t>& ids, int32_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

bool SameSet(std::vector<int32_t> a, std::vector<int32_t> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  return a == b;
}

// Makes the local replica match one assignment. Appends to `report`.
Status ApplyPartition(Partition& p, const PartitionAssignment& a, int32_t self,
                      ApplyReport* report) {
  const int32_t epoch = p.leader_epoch().value();
  if (a.leader_epoch < epoch) return Status::OK();  // stale: a newer state was applied
  if (a.leader == self) {
    if (!p.is_leader() || a.leader_epoch > epoch) {
      HR_RETURN_IF_ERROR(p.BecomeLeader(LeaderEpoch(a.leader_epoch), a.replicas, a.isr));
      ++report->became_leader;
    } else if (!SameSet(p.isr(), a.isr)) {
      HR_RETURN_IF_ERROR(p.UpdateIsr(a.isr));
      ++report->isr_updates;
    }
    return Status::OK();
  }
  if (p.is_leader() || a.leader_epoch > epoch || p.leader_id() != a.leader) {
    HR_RETURN_IF_ERROR(p.BecomeFollower(LeaderEpoch(a.leader_epoch), a.leader, a.replicas));
    ++report->became_follower;
  }
  return Status::OK();
}

}  // namespace

ApplyReport ApplyClusterView(TopicRegistry& topics, const ClusterView& view, int32_t self,
                             std::set<std::string>* seen_topics) {
  ApplyReport report;
  for (const auto& [name, t] : view.topics) {
    seen_topics->insert(name);
    const int32_t count = static_cast<int32_t>(t.partitions.size());
    for (const PartitionAssignment& a : t.partitions) {
      const std::string tp = name + "-" + std::to_string(a.partition);
      if (!Contains(a.replicas, self)) {
        Status removed = topics.RemoveReplica(name, a.partition);
        if (!removed.ok()) report.errors.push_back(tp + ": " + removed.ToString());
        continue;
      }
      auto p = topics.EnsureReplica(name, t.id, t.configs, count, a.partition);
      if (!p.ok()) {
        report.errors.push_back(tp + ": " + p.status().ToString());
        continue;
      }
      Status st = ApplyPartition(**p, a, self, &report);
      if (!st.ok()) {
        report.errors.push_back(tp + ": " + st.ToString());
        continue;
      }
      if (a.leader != self && a.leader >= 0) {
        if (const BrokerEndpoint* leader = view.FindBroker(a.leader)) {
          report.follow.push_back({*p, a.leader, leader->host, leader->port});
        }
      }
    }
  }
  for (const auto& local : topics.ListTopics()) {
    if (view.FindTopic(local->name)) continue;
    if (!seen_topics->count(local->name)) continue;  // never in the cluster: kept, not served
    Status st = topics.DeleteTopic(local->name);
    if (st.ok()) {
      HR_LOG(kInfo) << "topic " << local->name << " was deleted in the cluster; local replicas removed";
      seen_topics->erase(local->name);
    } else {
      report.errors.push_back(local->name + ": " + st.ToString());
    }
  }
  return report;
}

}  // namespace headrace::broker
