// The partition's replication side: follower append, truncation by epoch
// (KIP-101/279), role and ISR changes, follower state, and the
// leader-epoch cache (loading, rebuilding, answering). The leader side and
// the offsets policy are in partition.cc.
#include <algorithm>
#include <chrono>
#include <vector>

#include "broker/base/kafka_error.h"
#include "broker/partition/partition.h"
#include "broker/partition/producer_snapshot.h"
#include "common/file_slice.h"
#include "headrace/record_batch.h"

namespace headrace::broker {
namespace {

// Headers of every batch in `bytes` (already validated by the caller's
// append, or parsed up to the first bad one).
std::vector<BatchHeader> AllBatchHeaders(std::span<const uint8_t> bytes) {
  std::vector<BatchHeader> headers;
  size_t pos = 0;
  while (pos < bytes.size()) {
    Result<BatchHeader> h = ParseBatchHeader(bytes.subspan(pos));
    if (!h.ok()) break;
    headers.push_back(*h);
    pos += static_cast<size_t>(h->total_size());
  }
  return headers;
}

// The header of the batch holding `offset`, read from the log.
Result<BatchHeader> BatchHeaderAt(const Log& log, Offset offset) {
  HR_ASSIGN_OR_RETURN(ReadResult r, log.Read(offset, kBatchHeaderSize, log.end_offset(), true));
  if (r.slices.empty()) return Status::NotFound("no batch at " + std::to_string(offset.value()));
  // The read returns whole batches: the first slice starts with the batch.
  std::vector<uint8_t> buf(static_cast<size_t>(r.slices.front().length));
  HR_RETURN_IF_ERROR(ReadSlices(std::span<const FileSlice>(&r.slices.front(), 1), buf.data()));
  return ParseBatchHeader(std::span<const uint8_t>(buf.data(), buf.size()));
}

// Every epoch change in the log, by reading each batch header from the
// start (recovery of a lost leader-epoch-checkpoint).
Result<std::vector<EpochEntry>> ScanEpochs(const Log& log) {
  std::vector<EpochEntry> out;
  Offset next = log.start_offset();
  while (next < log.end_offset()) {
    HR_ASSIGN_OR_RETURN(BatchHeader h, BatchHeaderAt(log, next));
    if (h.partition_leader_epoch >= 0 &&
        (out.empty() || h.partition_leader_epoch > out.back().epoch.value())) {
      out.push_back({LeaderEpoch(h.partition_leader_epoch), std::max(h.base_offset, next)});
    }
    next = h.last_offset() + 1;
  }
  return out;
}

bool Contains(const std::vector<int32_t>& ids, int32_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

// How many of `from` are not in `to` (ISR members leaving, for metrics).
size_t CountMissing(const std::vector<int32_t>& from, const std::vector<int32_t>& to) {
  return static_cast<size_t>(
      std::count_if(from.begin(), from.end(), [&](int32_t id) { return !Contains(to, id); }));
}

}  // namespace

Status Partition::LoadEpochCacheLocked() {
  epoch_cache_ = LeaderEpochCache(log_->dir(), services_.file_env);
  HR_ASSIGN_OR_RETURN(bool found, epoch_cache_.Load());
  if (!found && log_->end_offset() > log_->start_offset()) {
    // Lost or never written: the batches carry their epochs. The first and
    // last batch agreeing (every single-node log) spares a full scan.
    HR_ASSIGN_OR_RETURN(BatchHeader first, BatchHeaderAt(*log_, log_->start_offset()));
    HR_ASSIGN_OR_RETURN(BatchHeader last, BatchHeaderAt(*log_, log_->end_offset() - 1));
    std::vector<EpochEntry> entries;
    if (first.partition_leader_epoch == last.partition_leader_epoch) {
      if (first.partition_leader_epoch >= 0)
        entries.push_back({LeaderEpoch(first.partition_leader_epoch), log_->start_offset()});
    } else {
      HR_ASSIGN_OR_RETURN(entries, ScanEpochs(*log_));
    }
    epoch_cache_.Reset(std::move(entries));
  }
  // An entry past the log end is a stale tail (one at the end: an epoch that
  // has not written yet, kept).
  HR_RETURN_IF_ERROR(epoch_cache_.TruncateFromEnd(log_->end_offset() + 1));
  // A single-node partition leads its latest epoch from where it is.
  LeaderEpoch epoch(std::max(epoch_cache_.latest_epoch().value(), 0));
  leader_epoch_.store(epoch.value());
  return epoch_cache_.Assign(epoch, log_->end_offset());
}

int64_t Partition::SteadyNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Partition::UpdateFollowerState(int32_t broker_id, Offset log_end, Offset flushed,
                                    int64_t now_ms, int64_t broker_epoch) {
  if (now_ms < 0) now_ms = SteadyNowMs();
  WatermarkSet changed = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (broker_id == services_.local_broker_id) return;
    auto it = std::find_if(replicas_.begin(), replicas_.end(),
                           [&](const ReplicaState& r) { return r.broker_id == broker_id; });
    if (it == replicas_.end()) return;
    const Offset leo = log_->end_offset(), fl = log_->flushed_offset();
    if (log_end >= leo) {
      it->last_caught_up_ms = std::max(it->last_caught_up_ms, now_ms);
    } else if (log_end >= it->last_fetch_leader_leo) {
      it->last_caught_up_ms = std::max(it->last_caught_up_ms, it->last_fetch_ms);
    }
    it->last_fetch_leader_leo = leo;
    it->last_fetch_ms = now_ms;
    it->fetched = true;
    it->broker_epoch = broker_epoch;
    it->log_end = std::min(log_end, leo);
    it->flushed = std::min(flushed, it->log_end);
    changed = RecomputeLocked(leo, fl);
  }
  AfterChange(changed, false);
}

std::optional<std::vector<int32_t>> Partition::ProposeIsr(
    int64_t now_ms, int64_t lag_time_max_ms, std::map<int32_t, int64_t>* fetch_epochs) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!is_leader() || offline()) {
    last_isr_check_real_ms_ = 0;
    return std::nullopt;
  }
  const int64_t real_now = SteadyNowMs();
  if (last_isr_check_real_ms_ > 0 && real_now - last_isr_check_real_ms_ > kLeaderStallMs) {
    const int64_t stalled = real_now - last_isr_check_real_ms_;  // the head comment
    for (ReplicaState& r : replicas_) {
      r.last_caught_up_ms = std::min(now_ms, r.last_caught_up_ms + stalled);
    }
  }
  last_isr_check_real_ms_ = real_now;
  const Offset leo = log_->end_offset();
  const Offset hw = high_watermark();
  auto state_of = [&](int32_t id) -> const ReplicaState* {
    for (const ReplicaState& r : replicas_) {
      if (r.broker_id == id) return &r;
    }
    return nullptr;
  };
  std::vector<int32_t> proposed;
  for (int32_t id : isr_) {
    const ReplicaState* r = state_of(id);
    const bool keep = id == services_.local_broker_id ||
                      (r != nullptr && (r->log_end >= leo ||
                                        now_ms - r->last_caught_up_ms <= lag_time_max_ms));
    if (keep) proposed.push_back(id);
  }
  for (const ReplicaState& r : replicas_) {
    if (Contains(isr_, r.broker_id)) continue;
    // Caught up as of a fetch within the lag time: offsets left by a replica
    // that stopped fetching (dead, partitioned) must not bring it back.
    if (r.fetched && now_ms - r.last_fetch_ms <= lag_time_max_ms && r.log_end >= hw &&
        r.log_end >= leader_epoch_start_) {
      proposed.push_back(r.broker_id);
    }
  }
  if (proposed == isr_) return std::nullopt;
  if (last_proposed_isr_ && *last_proposed_isr_ == proposed &&
      now_ms - last_proposed_at_ms_ < kIsrReproposeMs) {
    return std::nullopt;
  }
  last_proposed_isr_ = proposed;
  last_proposed_at_ms_ = now_ms;
  if (fetch_epochs != nullptr) {
    for (int32_t id : proposed) {
      const ReplicaState* r = state_of(id);
      if (r != nullptr && r->broker_epoch >= 0) (*fetch_epochs)[id] = r->broker_epoch;
    }
  }
  return proposed;
}

Status Partition::AssignEpochsLocked(std::span<const uint8_t> batches) {
  for (const BatchHeader& h : AllBatchHeaders(batches)) {
    if (h.partition_leader_epoch > epoch_cache_.latest_epoch().value()) {
      HR_RETURN_IF_ERROR(epoch_cache_.Assign(LeaderEpoch(h.partition_leader_epoch), h.base_offset));
    }
  }
  return Status::OK();
}

Result<AppendInfo> Partition::AppendAsFollower(std::span<uint8_t> batches,
                                               LeaderEpoch fetched_in_epoch) {
  std::unique_lock<std::mutex> lock(mu_);
  HR_RETURN_IF_ERROR(CheckServing());
  HR_RETURN_IF_ERROR(CheckFollowerWritesLocked());
  if (is_leader()) {
    return KafkaStatus(KafkaError::kNotLeaderOrFollower,
                       "this broker leads " + tp_.ToString() + ": no follower append");
  }
  if (fetched_in_epoch.value() >= 0 && fetched_in_epoch != leader_epoch()) {
    return KafkaStatus(KafkaError::kFencedLeaderEpoch,
                       "records of " + tp_.ToString() + " fetched in leader epoch " +
                           std::to_string(fetched_in_epoch.value()) + ", now " +
                           std::to_string(leader_epoch().value()));
  }
  // Before the append: the state must cover the log up to these batches.
  HR_RETURN_IF_ERROR(EnsureProducerStateLocked());
  const Offset leo_before = log_->end_offset(), flushed_before = log_->flushed_offset();
  Result<AppendInfo> info = log_->AppendWithOffsets(batches, services_.follower_write_cache);
  return FinishAppend(lock, std::move(info), leo_before, flushed_before, [&] {
    HR_RETURN_IF_ERROR(AssignEpochsLocked(batches));
    // Followers keep the leader's ongoing transactions and aborted index, so
    // that a follower made leader has them.
    ApplyProducerBatchesLocked(batches);
    return Status::OK();
  });
}

void Partition::SetHighWatermarkFromLeader(Offset leader_hw) {
  WatermarkSet changed = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (is_leader()) return;
    Offset hw = std::min(leader_hw, log_->end_offset());
    if (hw.value() > high_watermark_.load(std::memory_order_relaxed)) {
      high_watermark_.store(hw.value(), std::memory_order_release);
      changed = WatermarkBit(Watermark::kHighWatermark) | PublishLastStableLocked();
    }
  }
  AfterChange(changed, false);
}

Status Partition::TruncateTo(Offset offset) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    HR_RETURN_IF_ERROR(CheckServing());
    HR_RETURN_IF_ERROR(CheckFollowerWritesLocked());
    if (offset >= log_->end_offset()) return Status::OK();
    Status st = log_->Truncate(offset);
    if (!st.ok()) return st;
    const Offset leo = log_->end_offset();
    HR_RETURN_IF_ERROR(epoch_cache_.TruncateFromEnd(leo));
    {
      std::lock_guard<std::mutex> index_lock(txn_index_mu_);
      txn_index_.TruncateFrom(leo);
      aborted_count_.store(txn_index_.size());
    }
    if (high_watermark_.load() > leo.value()) high_watermark_.store(leo.value());
    // Rebuilt now (from a snapshot at or below the new end): the ongoing
    // transactions bound the LSO.
    if (snapshots_) HR_RETURN_IF_ERROR(DeleteProducerSnapshotsAbove(file_env(), log_->dir(), leo));
    pending_snapshot_.reset();
    active_segment_base_ = log_->active_segment_base();
    producer_state_ = ProducerStateTable();
    unreplicated_txns_.clear();
    HR_RETURN_IF_ERROR(EnsureProducerStateLocked());
    PublishLastStableLocked();
    for (ReplicaState& r : replicas_) {
      r.log_end = std::min(r.log_end, leo);
      r.flushed = std::min(r.flushed, leo);
    }
  }
  AfterChange(0, /*state_changed=*/true);
  return Status::OK();
}

Result<TruncationResult> Partition::TruncateByEpoch(LeaderEpoch leader_epoch, Offset end_offset) {
  Offset target;
  bool completed = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const Offset leo = log_->end_offset();
    if (leader_epoch.value() == kUndefinedEpoch || end_offset.value() == kUndefinedEpochOffset) {
      // The leader knows no epoch this old: fall back to the high watermark.
      target = std::min(high_watermark(), leo);
    } else {
      EpochEndOffset mine = epoch_cache_.EndOffsetFor(leader_epoch, leo);
      if (mine.epoch.value() == kUndefinedEpoch) {
        target = std::min(end_offset, leo);
      } else if (mine.epoch != leader_epoch) {
        // We never had the leader's epoch: cut to where our older one ends
        // and ask again (KIP-279).
        target = std::min(mine.end_offset, leo);
        completed = false;
      } else {
        target = std::min({mine.end_offset, end_offset, leo});
      }
    }
    target = std::max(target, log_->start_offset());
  }
  HR_RETURN_IF_ERROR(TruncateTo(target));
  return TruncationResult{log_end_offset(), completed};
}

Status Partition::TruncateFullyAndStartAt(Offset offset) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    HR_RETURN_IF_ERROR(CheckServing());
    HR_RETURN_IF_ERROR(CheckFollowerWritesLocked());
    if (offset.value() < 0) {
      return Status::InvalidArgument("cannot start " + tp_.ToString() + " at a negative offset");
    }
    Status st = log_->TruncateFullyAndStartAt(offset);
    if (!st.ok()) return st;
    epoch_cache_.Reset({});
    producer_state_ = ProducerStateTable();
    producer_state_.set_loaded();  // the log is empty
    unreplicated_txns_.clear();
    if (snapshots_) {
      HR_RETURN_IF_ERROR(DeleteProducerSnapshotsAbove(file_env(), log_->dir(), Offset(-1)));
    }
    pending_snapshot_.reset();
    active_segment_base_ = log_->active_segment_base();
    {
      std::lock_guard<std::mutex> index_lock(txn_index_mu_);
      txn_index_.Clear();
      aborted_count_.store(0);
    }
    high_watermark_.store(offset.value(), std::memory_order_release);
    last_stable_offset_.store(offset.value(), std::memory_order_release);
    for (ReplicaState& r : replicas_) {
      r.log_end = offset;
      r.flushed = offset;
    }
  }
  AfterChange(0, /*state_changed=*/true);
  return Status::OK();
}

Status Partition::BecomeLeader(LeaderEpoch epoch, std::vector<int32_t> replicas,
                               std::vector<int32_t> isr) {
  WatermarkSet changed = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const int32_t self = services_.local_broker_id;
    if (!Contains(replicas, self) || !Contains(isr, self)) {
      return Status::InvalidArgument("broker " + std::to_string(self) +
                                     " is not in the replicas and ISR of " + tp_.ToString());
    }
    if (epoch < leader_epoch()) {
      return KafkaStatus(KafkaError::kFencedLeaderEpoch,
                         "leader epoch " + std::to_string(epoch.value()) + " is older than " +
                             std::to_string(leader_epoch().value()) + " of " + tp_.ToString());
    }
    HR_RETURN_IF_ERROR(epoch_cache_.Assign(epoch, log_->end_offset()));
    // Every follower starts as caught up now (it has lag_time_max_ms to
    // fetch before it can be dropped from the ISR); its offsets are unknown
    // until it fetches.
    const int64_t now = SteadyNowMs();
    std::vector<ReplicaState> states;
    for (int32_t id : replicas) {
      ReplicaState r{id, Offset(0), Offset(0)};
      r.last_caught_up_ms = now;
      r.last_fetch_ms = now;
      if (id == self) {
        r.log_end = log_->end_offset();
        r.flushed = log_->flushed_offset();
        states.insert(states.begin(), r);
      } else {
        states.push_back(r);
      }
    }
    replicas_ = std::move(states);
    isr_ = std::move(isr);
    leader_epoch_start_ = log_->end_offset();
    last_proposed_isr_.reset();
    isr_size_.store(static_cast<int>(isr_.size()));
    leader_id_ = self;
    PublishViewLocked();
    leader_epoch_.store(epoch.value());
    is_leader_.store(true, std::memory_order_release);
    // Followers' offsets are unknown until they fetch; the HW waits for them.
    changed = RecomputeLocked(log_->end_offset(), log_->flushed_offset());
  }
  AfterChange(changed, /*state_changed=*/true);
  return Status::OK();
}

Status Partition::BecomeFollower(LeaderEpoch epoch, int32_t leader_id,
                                 std::vector<int32_t> replicas) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (epoch < leader_epoch()) {
      return KafkaStatus(KafkaError::kFencedLeaderEpoch,
                         "leader epoch " + std::to_string(epoch.value()) + " is older than " +
                             std::to_string(leader_epoch().value()) + " of " + tp_.ToString());
    }
    std::vector<ReplicaState> states{{services_.local_broker_id, log_->end_offset(),
                                      log_->flushed_offset()}};
    for (int32_t id : replicas) {
      if (id != services_.local_broker_id) states.push_back({id, Offset(0), Offset(0)});
    }
    replicas_ = std::move(states);
    isr_.clear();
    isr_size_.store(0);
    last_proposed_isr_.reset();
    leader_id_ = leader_id;
    PublishViewLocked();
    leader_epoch_.store(epoch.value());
    is_leader_.store(false, std::memory_order_release);
  }
  AfterChange(0, /*state_changed=*/true);
  return Status::OK();
}

void Partition::SealFollowerWrites(bool sealed) {
  std::lock_guard<std::mutex> lock(mu_);
  follower_writes_sealed_ = sealed;
}

Status Partition::CheckFollowerWritesLocked() const {
  if (!follower_writes_sealed_) return Status::OK();
  return KafkaStatus(KafkaError::kNotLeaderOrFollower,
                     tp_.ToString() + " is being moved to another log directory");
}

Status Partition::UpdateIsr(std::vector<int32_t> isr) {
  WatermarkSet changed = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!is_leader() || !Contains(isr, services_.local_broker_id)) {
      return Status::InvalidArgument("an ISR of " + tp_.ToString() +
                                     " must contain its leader, broker " +
                                     std::to_string(services_.local_broker_id));
    }
    // A replica joining the ISR was caught up when it was proposed: it gets
    // a full lag_time_max_ms before it can be dropped again. One leaving it
    // (dropped by this leader, or by the controller for a failed log
    // directory) rejoins only after a fetch made since: the offsets it left
    // behind say nothing of whether it still copies (Kafka expands an ISR
    // only on a follower's fetch).
    const int64_t now = SteadyNowMs();
    for (ReplicaState& r : replicas_) {
      const bool was_in = Contains(isr_, r.broker_id), is_in = Contains(isr, r.broker_id);
      if (!was_in && is_in) r.last_caught_up_ms = std::max(r.last_caught_up_ms, now);
      if (was_in && !is_in) r.fetched = false;
    }
    if (services_.metrics)
      services_.metrics->RecordIsrChange(CountMissing(isr_, isr), CountMissing(isr, isr_));
    isr_ = std::move(isr);
    isr_size_.store(static_cast<int>(isr_.size()));
    PublishViewLocked();
    last_proposed_isr_.reset();
    changed = RecomputeLocked(log_->end_offset(), log_->flushed_offset());
  }
  // Not a state change: leader, leader epoch and log are as they were, so
  // parked acks=all produces keep waiting for the HW under the new ISR (a
  // shrunk one can move it now: the watermark notification completes them,
  // and Settle answers NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR is
  // below min.insync.replicas then). Waking them here failed them with
  // NOT_LEADER_OR_FOLLOWER, and their producers retried what was stored.
  AfterChange(changed, /*state_changed=*/false);
  return Status::OK();
}

void Partition::PublishViewLocked() {
  std::vector<int32_t> ids;
  ids.reserve(replicas_.size());
  for (const ReplicaState& r : replicas_) ids.push_back(r.broker_id);
  std::lock_guard<std::mutex> lock(view_mu_);
  view_leader_id_ = leader_id_;
  view_replicas_ = std::move(ids);
  view_isr_ = isr_;
}

int32_t Partition::leader_id() const {
  std::lock_guard<std::mutex> lock(view_mu_);
  return view_leader_id_;
}

std::vector<int32_t> Partition::replicas() const {
  std::lock_guard<std::mutex> lock(view_mu_);
  return view_replicas_;
}

std::vector<int32_t> Partition::isr() const {
  std::lock_guard<std::mutex> lock(view_mu_);
  return view_isr_;
}

std::vector<EpochEntry> Partition::epoch_entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return epoch_cache_.entries();
}

EpochEndOffset Partition::EndOffsetForEpoch(LeaderEpoch epoch) const {
  std::lock_guard<std::mutex> lock(mu_);
  return epoch_cache_.EndOffsetFor(epoch, log_->end_offset());
}

LeaderEpoch Partition::EpochAt(Offset offset) const {
  std::lock_guard<std::mutex> lock(mu_);
  LeaderEpoch epoch(kUndefinedEpoch);
  for (const EpochEntry& e : epoch_cache_.entries()) {
    if (e.start_offset > offset) break;
    epoch = e.epoch;
  }
  return epoch;
}

// ---- replication throttles ----

namespace {
// The brokers a normalised "*" / "p:b,p:b" list names for partition
// `partition` (-1 for "*").
std::vector<int32_t> ThrottledBrokers(const ConfigMap& passive, const char* key,
                                      int32_t partition) {
  std::vector<int32_t> out;
  auto it = passive.find(key);
  if (it == passive.end() || it->second.empty()) return out;
  if (it->second == "*") return {-1};
  std::string_view list = it->second;
  while (!list.empty()) {
    size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    size_t colon = item.find(':');
    if (colon == std::string_view::npos) continue;
    // Validated by the topic table: two non-negative ints.
    if (std::stoi(std::string(item.substr(0, colon))) == partition) {
      out.push_back(std::stoi(std::string(item.substr(colon + 1))));
    }
  }
  return out;
}
}  // namespace

void Partition::SetThrottleSettings(const TopicSettings& settings) {
  std::vector<int32_t> leader = ThrottledBrokers(
      settings.passive, "leader.replication.throttled.replicas", tp_.partition);
  std::vector<int32_t> follower = ThrottledBrokers(
      settings.passive, "follower.replication.throttled.replicas", tp_.partition);
  std::lock_guard<std::mutex> l(throttle_mu_);
  throttled_brokers_[0] = std::move(leader);
  throttled_brokers_[1] = std::move(follower);
}

bool Partition::ReplicationThrottled(ThrottleSide side, int32_t broker) const {
  std::lock_guard<std::mutex> l(throttle_mu_);
  for (int32_t b : throttled_brokers_[static_cast<int>(side)]) {
    if (b == -1 || b == broker) return true;
  }
  return false;
}

bool Partition::InIsr(int32_t replica) const {
  std::lock_guard<std::mutex> l(mu_);
  return std::find(isr_.begin(), isr_.end(), replica) != isr_.end();
}

}  // namespace headrace::broker
