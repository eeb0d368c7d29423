#include "broker/coordinator/share/share_coordinator.h"

#include <algorithm>

#include "common/logging.h"

namespace headrace::broker::share {

Result<std::shared_ptr<ShareCoordinator>> ShareCoordinator::Open(Options options) {
  std::shared_ptr<ShareCoordinator> c(new ShareCoordinator());
  c->segment_bytes_ = options.segment_bytes;
  if (options.log_partition) {
    c->log_ = group::GroupLog::Attach(options.log_partition);
    c->attached_ = true;
  } else {
    HR_ASSIGN_OR_RETURN(c->log_, group::GroupLog::Open(options.data_dir, options.log_services,
                                                       options.segment_bytes, options.env,
                                                       kShareStateLogDirName));
  }
  c->log_partition_ = c->log_->partition();
  HR_RETURN_IF_ERROR(c->Load());
  return c;
}

ShareCoordinator::~ShareCoordinator() { Stop(); }

Status ShareCoordinator::Load() {
  std::map<SharePartitionKey, ShareState> loaded;
  Status bad = Status::OK();
  int64_t bytes = 0;
  HR_RETURN_IF_ERROR(log_->Replay([&](const group::GroupLog::Entry& e) {
    bytes += static_cast<int64_t>(e.key.size() + (e.value ? e.value->size() : 0));
    Result<SharePartitionKey> key = DecodeShareStateKey(e.key);
    if (!key.ok()) {
      bad = key.status();
      return;
    }
    if (!e.value) {
      loaded.erase(*key);
      return;
    }
    Result<ShareState> state = DecodeShareStateValue(*e.value);
    if (!state.ok()) {
      bad = state.status();
      return;
    }
    loaded[*key] = std::move(*state);
  }));
  if (!bad.ok()) {
    HR_LOG(kWarn) << "share coordinator: skipped unreadable records: " << bad.ToString();
  }
  std::lock_guard<std::mutex> lock(mu_);
  states_ = std::move(loaded);
  appended_since_compaction_ = bytes;
  next_compaction_bytes_ = segment_bytes_;
  if (!states_.empty() || !attached_) {
    HR_LOG(kInfo) << "share coordinator: loaded " << states_.size() << " share-partition state(s)"
                  << (attached_ ? " of " + log_partition_->topic_partition().ToString()
                                : std::string());
  }
  return Status::OK();
}

std::optional<ShareState> ShareCoordinator::Read(const SharePartitionKey& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = states_.find(key);
  if (it == states_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::pair<SharePartitionKey, ShareState>> ShareCoordinator::StatesOf(
    const std::string& group) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<SharePartitionKey, ShareState>> out;
  for (auto it = states_.lower_bound(SharePartitionKey{group, Uuid{}, INT32_MIN});
       it != states_.end() && it->first.group == group; ++it) {
    out.emplace_back(it->first, it->second);
  }
  return out;
}

size_t ShareCoordinator::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return states_.size();
}

SharePersisted ShareCoordinator::AppendLocked(const std::vector<group::GroupLog::Entry>& entries) {
  if (!log_) return {KafkaError::kNotCoordinator, 0};
  if (entries.empty()) return {KafkaError::kNone, log_partition_->log_end_offset().value()};
  Status st = log_->Append(entries);
  if (!st.ok()) {
    HR_LOG(kWarn) << "share coordinator: cannot write share state: " << st.ToString();
    return {KafkaError::kNotCoordinator, 0};
  }
  for (const auto& e : entries) {
    appended_since_compaction_ +=
        static_cast<int64_t>(e.key.size() + (e.value ? e.value->size() : 0));
  }
  return {KafkaError::kNone, log_partition_->log_end_offset().value()};
}

SharePersisted ShareCoordinator::Initialize(const SharePartitionKey& key, int32_t state_epoch,
                                            int64_t start_offset, int32_t leader_epoch) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = states_.find(key);
  if (it != states_.end() && it->second.state_epoch >= state_epoch) {
    return {KafkaError::kFencedStateEpoch, 0};
  }
  ShareState next;
  next.state_epoch = state_epoch;
  next.leader_epoch = leader_epoch;
  next.start_offset = start_offset;
  SharePersisted out = AppendLocked({{EncodeShareStateKey(key), EncodeShareStateValue(next)}});
  if (out.error == KafkaError::kNone) {
    states_[key] = std::move(next);
    MaybeCompactLocked();
  }
  return out;
}

SharePersisted ShareCoordinator::Write(const SharePartitionKey& key, const ShareState& write,
                                       bool require_initialized) {
  std::lock_guard<std::mutex> lock(mu_);
  ShareState next;
  auto it = states_.find(key);
  if (it == states_.end() && require_initialized) {
    if (!log_) return {KafkaError::kNotCoordinator, 0};
    return {KafkaError::kInvalidRequest, 0};
  }
  if (it != states_.end()) {
    const ShareState& now = it->second;
    if (write.state_epoch != now.state_epoch) return {KafkaError::kFencedStateEpoch, 0};
    if (write.leader_epoch < now.leader_epoch) return {KafkaError::kFencedLeaderEpoch, 0};
    next = now;
    next.snapshot_epoch = (now.snapshot_epoch + 1) & 0xffff;
  } else {
    next.state_epoch = write.state_epoch;
  }
  next.leader_epoch = write.leader_epoch;
  if (write.start_offset >= 0) next.start_offset = write.start_offset;
  next.batches = MergeStateBatches(next.batches, write.batches, next.start_offset);
  SharePersisted out = AppendLocked({{EncodeShareStateKey(key), EncodeShareStateValue(next)}});
  if (out.error == KafkaError::kNone) {
    states_[key] = std::move(next);
    MaybeCompactLocked();
  }
  return out;
}

SharePersisted ShareCoordinator::DeleteGroup(const std::string& group) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<group::GroupLog::Entry> tombstones;
  std::vector<SharePartitionKey> keys;
  for (auto it = states_.lower_bound(SharePartitionKey{group, Uuid{}, INT32_MIN});
       it != states_.end() && it->first.group == group; ++it) {
    tombstones.push_back({EncodeShareStateKey(it->first), std::nullopt});
    keys.push_back(it->first);
  }
  SharePersisted out = AppendLocked(tombstones);
  if (out.error == KafkaError::kNone) {
    for (const auto& k : keys) states_.erase(k);
    MaybeCompactLocked();
  }
  return out;
}

SharePersisted ShareCoordinator::Delete(const std::vector<SharePartitionKey>& keys) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<group::GroupLog::Entry> tombstones;
  std::vector<SharePartitionKey> stored;
  for (const SharePartitionKey& k : keys) {
    if (!states_.contains(k) || std::find(stored.begin(), stored.end(), k) != stored.end()) {
      continue;
    }
    tombstones.push_back({EncodeShareStateKey(k), std::nullopt});
    stored.push_back(k);
  }
  SharePersisted out = AppendLocked(tombstones);
  if (out.error == KafkaError::kNone) {
    for (const auto& k : stored) states_.erase(k);
    MaybeCompactLocked();
  }
  return out;
}

void ShareCoordinator::MaybeCompactLocked() {
  if (!log_) return;
  (void)log_->FinishRewrite();
  if (appended_since_compaction_ < next_compaction_bytes_) return;
  std::vector<group::GroupLog::Entry> live;
  int64_t live_bytes = 0;
  for (const auto& [key, state] : states_) {
    live.push_back({EncodeShareStateKey(key), EncodeShareStateValue(state)});
    live_bytes += static_cast<int64_t>(live.back().key.size() + live.back().value->size());
  }
  if (!live.empty()) {
    if (Status st = log_->Rewrite(live); !st.ok()) {
      HR_LOG(kWarn) << "share coordinator: compaction failed: " << st.ToString();
    }
  }
  // Due again once as much as the live state (at least a segment) is appended.
  appended_since_compaction_ = 0;
  next_compaction_bytes_ = std::max(segment_bytes_, live_bytes);
}

void ShareCoordinator::Stop() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!log_) return;
  if (Status st = log_->Close(); !st.ok()) {
    HR_LOG(kWarn) << "share coordinator: closing the log: " << st.ToString();
  }
  log_.reset();
}

}  // namespace headrace::broker::share
