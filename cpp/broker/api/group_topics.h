// The topics the group APIs compute assignments over: every topic that
// exists now, with its id and partition count. Cluster mode reads the
// controller's view (the coordinator need not hold a replica of them); a
// single node its local registry. The one place that choice is made, for
// consumer (KIP-848) and share groups.
//
// Threading: a snapshot taken at construction in cluster mode (the view is
// immutable); the local registry is read under its own lock per call.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "broker/api/handler.h"
#include "broker/coordinator/group/group_coordinator.h"

namespace headrace::broker {

class ExistingTopics {
 public:
  explicit ExistingTopics(BrokerContext& ctx) : registry_(ctx.topics()) {
    if (ClusterState* cluster = ctx.state->cluster()) view_ = cluster->view();
  }

  std::optional<group::TopicInfo> Find(const std::string& name) const {
    if (view_) {
      const TopicView* t = view_->FindTopic(name);
      if (!t) return std::nullopt;
      return group::TopicInfo{t->id, static_cast<int32_t>(t->partitions.size())};
    }
    auto t = registry_.FindTopic(name);
    if (!t) return std::nullopt;
    return group::TopicInfo{t->id, t->partition_count()};
  }

  std::vector<std::string> Names() const {
    std::vector<std::string> names;
    if (view_) {
      for (const auto& [name, t] : view_->topics) names.push_back(name);
    } else {
      for (const auto& t : registry_.ListTopics()) names.push_back(t->name);
    }
    return names;
  }

  std::map<std::string, group::TopicInfo> All() const {
    std::map<std::string, group::TopicInfo> out;
    if (view_) {
      for (const auto& [name, t] : view_->topics) {
        out[name] = group::TopicInfo{t.id, static_cast<int32_t>(t.partitions.size())};
      }
    } else {
      for (const auto& t : registry_.ListTopics()) {
        out[t->name] = group::TopicInfo{t->id, t->partition_count()};
      }
    }
    return out;
  }

 private:
  TopicRegistry& registry_;
  std::shared_ptr<const ClusterView> view_;  // null on a single node
};

inline group::TopicSizes SizesOf(const std::map<std::string, group::TopicInfo>& topics) {
  group::TopicSizes sizes;
  for (const auto& [name, t] : topics) sizes[name] = t.partitions;
  return sizes;
}

}  // namespace headrace::broker
