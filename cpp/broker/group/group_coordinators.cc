#include "broker/group/group_coordinators.h"

#include <pthread.h>

#include <chrono>
#include <utility>

#include "broker/group/group_partition.h"

namespace headrace::broker::group {

GroupCoordinators::~GroupCoordinators() { StopTimer(); }

void GroupCoordinators::SetPartitionCount(int32_t n) {
  std::lock_guard<std::mutex> l(mu_);
  partitions_ = n;
}

int32_t GroupCoordinators::partition_count() const {
  std::lock_guard<std::mutex> l(mu_);
  return partitions_;
}

int32_t GroupCoordinators::PartitionFor(std::string_view group_id) const {
  const int32_t n = partition_count();
  return n > 0 ? GroupPartition(group_id, n) : -1;
}

CoordinatorLookup GroupCoordinators::For(std::string_view group_id) const {
  CoordinatorLookup out;
  std::lock_guard<std::mutex> l(mu_);
  if (partitions_ <= 0) {
    out.error = KafkaError::kCoordinatorNotAvailable;
    return out;
  }
  out.partition = GroupPartition(group_id, partitions_);
  auto it = by_partition_.find(out.partition);
  if (it == by_partition_.end()) {
    out.error = elsewhere_;
    return out;
  }
  out.coordinator = it->second;
  return out;
}

std::shared_ptr<GroupCoordinator> GroupCoordinators::ForPartition(int32_t partition) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = by_partition_.find(partition);
  return it == by_partition_.end() ? nullptr : it->second;
}

std::map<int32_t, std::shared_ptr<GroupCoordinator>> GroupCoordinators::All() const {
  std::lock_guard<std::mutex> l(mu_);
  return by_partition_;
}

void GroupCoordinators::Set(int32_t partition, std::shared_ptr<GroupCoordinator> c) {
  std::lock_guard<std::mutex> l(mu_);
  if (c) {
    by_partition_[partition] = std::move(c);
  } else {
    by_partition_.erase(partition);
  }
}

std::shared_ptr<GroupCoordinator> GroupCoordinators::Take(int32_t partition) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = by_partition_.find(partition);
  if (it == by_partition_.end()) return nullptr;
  std::shared_ptr<GroupCoordinator> c = std::move(it->second);
  by_partition_.erase(it);
  return c;
}

void GroupCoordinators::Stop(int32_t partition) {
  if (std::shared_ptr<GroupCoordinator> c = Take(partition)) c->Stop();
}

void GroupCoordinators::StartTimer(int64_t interval_ms) {
  std::lock_guard<std::mutex> l(mu_);
  if (timer_.joinable() || timer_stopped_) return;
  timer_ = std::thread([this, interval_ms] {
    pthread_setname_np(pthread_self(), "hr-group-timer");
    TimerLoop(interval_ms);
  });
}

void GroupCoordinators::StopTimer() {
  {
    std::lock_guard<std::mutex> l(mu_);
    timer_stopped_ = true;
  }
  timer_cv_.notify_all();
  if (timer_.joinable()) timer_.join();
}

void GroupCoordinators::TimerLoop(int64_t interval_ms) {
  std::unique_lock<std::mutex> l(mu_);
  while (!timer_stopped_) {
    timer_cv_.wait_for(l, std::chrono::milliseconds(interval_ms));
    if (timer_stopped_) break;
    // Tick outside the lock: a coordinator's Tick runs callbacks and takes
    // its own mutex; a coordinator taken away meanwhile is stopped, and
    // Tick on a stopped coordinator does nothing.
    std::map<int32_t, std::shared_ptr<GroupCoordinator>> all = by_partition_;
    l.unlock();
    for (auto& [p, c] : all) c->Tick();
    all.clear();
    l.lock();
  }
}

}  // namespace headrace::broker::group
