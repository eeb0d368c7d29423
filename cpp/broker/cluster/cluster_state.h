// ClusterState: what a broker in cluster mode knows of the cluster and what
// it hands to the control plane. Owned by BrokerState; null on a single
// node. Handlers read view() (a snapshot, never null after the first
// apply_cluster; empty before) and submit admin work to requests().
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "broker/cluster/cluster_view.h"
#include "broker/cluster/control_requests.h"

namespace headrace::broker {

class ClusterState {
 public:
  ClusterState() : view_(std::make_shared<ClusterView>()) {}

  std::shared_ptr<const ClusterView> view() const {
    std::lock_guard<std::mutex> lock(mu_);
    return view_;
  }
  void Publish(std::shared_ptr<const ClusterView> view) {
    std::lock_guard<std::mutex> lock(mu_);
    view_ = std::move(view);
    applied_.store(true, std::memory_order_release);
  }
  // True once the control plane applied a first view. Until then the broker
  // does not serve clients (Dispatcher): it knows neither the cluster's id
  // nor its leaders, and a client that saw another cluster id would drop
  // the real cluster's brokers (librdkafka does).
  bool applied() const { return applied_.load(std::memory_order_acquire); }
  ControlRequests& requests() { return requests_; }
  // Topic names seen in an applied view (ApplyClusterView). Only the
  // applying thread uses it (Broker::ApplyClusterState serialises).
  std::set<std::string>& seen_topics() { return seen_topics_; }
  // Auto-creation requests in flight, one per topic name: Begin is true for
  // the first caller, End when the control plane answered.
  bool BeginAutoCreate(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    return auto_creating_.insert(name).second;
  }
  void EndAutoCreate(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    auto_creating_.erase(name);
  }

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const ClusterView> view_;
  std::atomic<bool> applied_{false};
  ControlRequests requests_;
  std::set<std::string> seen_topics_;
  std::set<std::string> auto_creating_;  // guarded by mu_
};

}  // namespace headrace::broker
