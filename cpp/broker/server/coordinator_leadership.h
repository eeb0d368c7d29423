// CoordinatorLeadership: cluster mode's rule that a broker coordinates the
// keys of every partition of an internal topic (__consumer_offsets,
// __transaction_state) it leads, and only those. Follow() is called after
// each cluster state apply: for every partition of the topic it starts a
// coordinator on the partition's log when this broker became its leader,
// reloads it when the leader epoch changed (the state is what the previous
// leader wrote and replicated), and stops it when this broker no longer
// leads it or the partition is gone. It also reloads one whose replica was
// replaced by another Partition object (AlterReplicaLogDirs moved it to
// another log directory: log_dir_mover.h). The coordinators are published in a
// group::CoordinatorRouter (docs/cluster.md "Consumer groups",
// "Transactions").
//
// Threading: not thread-safe; the broker calls it under its own mutex.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "broker/cluster/cluster_view.h"
#include "broker/partition/partition.h"
#include "broker/topics/topic_registry.h"
#include "common/logging.h"

namespace headrace::broker {

// "[0,1,2]": ids for a log line.
std::string IdList(const std::vector<int32_t>& ids);

template <class Router>
class CoordinatorLeadership {
 public:
  // `what`: the coordinator's name in log lines ("group coordinator");
  // `topic`: the internal topic; `router`: where coordinators are published
  // (outlives this).
  CoordinatorLeadership(const char* what, const char* topic, Router* router)
      : what_(what), topic_(topic), router_(router) {}

  // Brings the router in line with `view` and the local replicas in
  // `topics`. `open(log)` opens a coordinator on a led partition's log:
  // Result<std::shared_ptr<C>>. A partition that fails to open is logged and
  // retried at the next Follow.
  template <class Open>
  void Follow(const ClusterView& view, const TopicRegistry& topics, const Open& open) {
    const TopicView* t = view.FindTopic(topic_);
    const int32_t count = t ? static_cast<int32_t>(t->partitions.size()) : 0;
    router_->SetPartitionCount(count);
    for (const auto& [partition, c] : router_->All()) {
      if (partition < count) continue;
      router_->Stop(partition);
      loaded_.erase(partition);
      HR_LOG(kInfo) << what_ << ": stopped (" << topic_ << "-" << partition << " is gone)";
    }
    std::vector<int32_t> started;
    for (int32_t p = 0; p < count; ++p) {
      if (FollowPartition(p, topics.FindPartition(topic_, p), open)) started.push_back(p);
    }
    if (!started.empty()) {
      HR_LOG(kInfo) << what_ << ": coordinating " << topic_ << " partition(s) "
                    << IdList(started) << " (" << router_->All().size() << " of " << count
                    << " led here)";
    }
  }

  // Stops every coordinator and the router's timer.
  void StopAll() {
    router_->StopAll();
    loaded_.clear();
  }

 private:
  // True when a coordinator was (re)started on partition `p`.
  template <class Open>
  bool FollowPartition(int32_t p, const std::shared_ptr<Partition>& log, const Open& open) {
    const bool lead = log && log->is_leader();
    const Loaded now{lead ? log->leader_epoch().value() : -1, lead ? log.get() : nullptr};
    const bool running = router_->ForPartition(p) != nullptr;
    auto [it, added] = loaded_.try_emplace(p);
    if (lead && running && it->second == now) return false;
    if (!lead && !running) return false;
    router_->Stop(p);
    it->second = Loaded{};
    if (!lead) {
      HR_LOG(kInfo) << what_ << ": stopped (no longer the leader of " << topic_ << "-" << p
                    << ")";
      return false;
    }
    auto c = open(log);
    if (!c.ok()) {
      HR_LOG(kError) << what_ << ": cannot load " << topic_ << "-" << p << ": "
                     << c.status().ToString();
      return false;
    }
    router_->Set(p, std::move(c).value());
    it->second = now;
    return true;
  }

  const char* what_;
  const char* topic_;
  Router* router_;
  // What a partition's coordinator was loaded from: the leader epoch and
  // the replica (compared by identity only, never dereferenced; the running
  // coordinator holds that replica, so its address cannot be reused).
  struct Loaded {
    int32_t epoch = -1;
    const Partition* log = nullptr;
    bool operator==(const Loaded&) const = default;
  };
  std::map<int32_t, Loaded> loaded_;  // partition -> what its coordinator was loaded from
};

}  // namespace headrace::broker
