#include "broker/share/share_registry.h"

namespace headrace::broker::share {

std::shared_ptr<ShareRegistry::Entry> ShareRegistry::Get(const SharePartitionKey& key) {
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<Entry>& e = entries_[key];
  if (!e) e = std::make_shared<Entry>();
  return e;
}

std::shared_ptr<ShareRegistry::Entry> ShareRegistry::Find(const SharePartitionKey& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<ShareRegistry::Entry>> ShareRegistry::EntriesOf(
    const std::string& group) const {
  std::vector<std::shared_ptr<Entry>> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = entries_.lower_bound(SharePartitionKey{group, Uuid{}, INT32_MIN});
       it != entries_.end() && it->first.group == group; ++it) {
    out.push_back(it->second);
  }
  return out;
}

int64_t ShareRegistry::ReleaseMember(const std::string& group, const std::string& member) {
  int64_t n = 0;
  for (const std::shared_ptr<Entry>& e : EntriesOf(group)) {
    std::lock_guard<std::mutex> lock(e->mu);
    if (e->state) n += e->state->ReleaseMember(member);
  }
  return n;
}

void ShareRegistry::DropGroup(const std::string& group) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.lower_bound(SharePartitionKey{group, Uuid{}, INT32_MIN});
  while (it != entries_.end() && it->first.group == group) it = entries_.erase(it);
}

ShareRegistry::Totals ShareRegistry::Sum() const {
  std::vector<std::shared_ptr<Entry>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, e] : entries_) all.push_back(e);
  }
  Totals t;
  for (const std::shared_ptr<Entry>& e : all) {
    std::lock_guard<std::mutex> lock(e->mu);
    if (!e->state) continue;
    ++t.share_partitions;
    t.acquired_now += e->state->acquired_now();
    const SharePartition::Counters& c = e->state->counters();
    t.counters.acquired += c.acquired;
    t.counters.redelivered += c.redelivered;
    t.counters.acknowledged += c.acknowledged;
    t.counters.archived += c.archived;
    t.counters.released += c.released;
  }
  return t;
}

}  // namespace headrace::broker::share
