// Transactional offset commits (TxnOffsetCommit, KIP-98/447): offsets held
// per producer id until the transaction's marker commits or aborts them.
// Records: kind 3 (one pending offset) and kind 4 (the transaction's end),
// group_records.h; docs/consumer-groups.md ("Transactional offsets").
#include <algorithm>

#include "broker/coordinator/group/group_coordinator.h"
#include "broker/coordinator/group/group_log_entries.h"
#include "common/logging.h"

namespace headrace::broker::group {

std::vector<KafkaError> GroupCoordinator::CommitTxnOffsets(const TxnCommitRequest& req) {
  std::vector<KafkaError> out(req.partitions.size(), KafkaError::kNone);
  auto fail_all = [&](KafkaError e) {
    std::fill(out.begin(), out.end(), e);
    return out;
  };
  std::lock_guard<std::mutex> l(mu_);
  if (stopped_ || !log_) return fail_all(KafkaError::kCoordinatorNotAvailable);
  if (req.group_id.empty()) return fail_all(KafkaError::kInvalidGroupId);
  const int64_t now = Now();
  auto ended = ended_txns_.find(req.producer_id);
  if (ended != ended_txns_.end() && req.producer_epoch < ended->second.producer_epoch)
    return fail_all(KafkaError::kInvalidProducerEpoch);
  auto it = groups_.find(req.group_id);
  if (it == groups_.end()) {
    // As Commit: only a request without a generation may create the group.
    if (req.generation >= 0) return fail_all(KafkaError::kIllegalGeneration);
  } else {
    Group& g = it->second;
    const bool simple = req.generation < 0 && g.Is(GroupState::kEmpty);
    const bool names_member = req.generation >= 0 || !req.member_id.empty() || req.instance_id;
    if (!simple && names_member) {
      KafkaError e = CheckMember(g, req.member_id, req.instance_id);
      if (e != KafkaError::kNone) return fail_all(e);
      if (req.generation != g.generation) return fail_all(KafkaError::kIllegalGeneration);
    }
    auto txn = g.pending_txn_offsets.find(req.producer_id);
    if (txn != g.pending_txn_offsets.end() && req.producer_epoch < txn->second.producer_epoch)
      return fail_all(KafkaError::kInvalidProducerEpoch);
  }
  const std::string what =
      "transactional offset commit of producer " + std::to_string(req.producer_id);
  StoreOffsets(
      req.group_id, req.partitions, now, what.c_str(), out,
      [&](const TopicPartitionKey& tp, const CommittedOffset& c) {
        return PendingTxnOffsetEntry(req.group_id, req.producer_id, req.producer_epoch, tp, c);
      },
      [&](Group& g, const TopicPartitionKey& tp, CommittedOffset c) {
        AddPendingTxnOffset(g, req.producer_id, req.producer_epoch, tp, std::move(c));
      });
  return out;
}

Status GroupCoordinator::CompleteTxn(int64_t producer_id, int16_t producer_epoch, bool commit) {
  std::lock_guard<std::mutex> l(mu_);
  if (stopped_ || !log_) return Status::Closed("group coordinator stopped");
  auto ended = ended_txns_.find(producer_id);
  const bool newer_epoch =
      ended == ended_txns_.end() || producer_epoch > ended->second.producer_epoch;
  // Nothing pending and no new fence: a retry, or a transaction whose offsets
  // never arrived.
  if (!txn_groups_.count(producer_id) && !newer_epoch) return Status::OK();
  const TxnEndValue end{commit, producer_epoch, Now()};
  HR_RETURN_IF_ERROR(log_->Append({TxnEndEntry(producer_id, end)}));
  ApplyTxnEnd(producer_id, end);
  return Status::OK();
}

bool GroupCoordinator::HasPendingTxnOffsets(const std::string& group_id) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = groups_.find(group_id);
  return it != groups_.end() && !it->second.pending_txn_offsets.empty();
}

void GroupCoordinator::ApplyTxnLogEntry(const RecordKey& key,
                                        const std::optional<std::string>& value) {
  if (key.kind == RecordKind::kTxnEnd) {
    if (!value) return;
    auto v = DecodeTxnEndValue(*value);
    if (!v.ok()) { HR_LOG(kWarn) << "group log: " << v.status().ToString(); return; }
    ApplyTxnEnd(key.producer_id, *v);
    return;
  }
  TopicPartitionKey tp{key.topic, key.partition};
  if (!value) {  // OffsetDelete removed it
    auto it = groups_.find(key.group);
    if (it != groups_.end()) ErasePendingTxnOffset(it->second, tp, key.producer_id);
    return;
  }
  auto v = DecodePendingTxnOffsetValue(*value);
  if (!v.ok()) { HR_LOG(kWarn) << "group log: " << v.status().ToString(); return; }
  const OffsetValue& o = v->offset;
  Group& g = GetOrCreate(key.group);
  CommittedOffset c{o.offset, o.leader_epoch, o.metadata, o.commit_time_ms};
  const CommittedOffset* current = nullptr;
  auto txn = g.pending_txn_offsets.find(key.producer_id);
  if (txn != g.pending_txn_offsets.end()) {
    auto it = txn->second.offsets.find(tp);
    if (it != txn->second.offsets.end()) current = &it->second;
  }
  c.log_order = ReplayedOrder(current, c);
  AddPendingTxnOffset(g, key.producer_id, v->producer_epoch, tp, std::move(c));
}

int64_t GroupCoordinator::ReplayedOrder(const CommittedOffset* current,
                                        const CommittedOffset& replayed) {
  if (current && SameCommit(*current, replayed)) return current->log_order;
  return next_log_order_++;
}

void GroupCoordinator::AddPendingTxnOffset(Group& g, int64_t producer_id, int16_t producer_epoch,
                                           const TopicPartitionKey& tp, CommittedOffset c) {
  Group::PendingTxn& txn = g.pending_txn_offsets[producer_id];
  txn.producer_epoch = std::max(txn.producer_epoch, producer_epoch);
  txn.offsets[tp] = std::move(c);
  txn_groups_[producer_id].insert(g.id);
}

void GroupCoordinator::ErasePendingTxnOffset(Group& g, const TopicPartitionKey& tp,
                                             int64_t producer_id) {
  for (auto it = g.pending_txn_offsets.begin(); it != g.pending_txn_offsets.end();) {
    if (producer_id < 0 || it->first == producer_id) it->second.offsets.erase(tp);
    if (!it->second.offsets.empty()) {
      ++it;
      continue;
    }
    auto groups = txn_groups_.find(it->first);
    if (groups != txn_groups_.end()) {
      groups->second.erase(g.id);
      if (groups->second.empty()) txn_groups_.erase(groups);
    }
    it = g.pending_txn_offsets.erase(it);
  }
}

void GroupCoordinator::ApplyTxnEnd(int64_t producer_id, const TxnEndValue& end) {
  TxnEndValue& last = ended_txns_[producer_id];
  if (end.producer_epoch >= last.producer_epoch) last = end;
  if (end.fence_only) return;
  const bool commit = end.commit;
  auto groups = txn_groups_.find(producer_id);
  if (groups == txn_groups_.end()) return;
  for (const std::string& id : groups->second) {
    auto git = groups_.find(id);
    if (git == groups_.end()) continue;
    Group& g = git->second;
    auto txn = g.pending_txn_offsets.find(producer_id);
    if (txn == g.pending_txn_offsets.end()) continue;
    if (commit) {
      for (auto& [tp, c] : txn->second.offsets) {
        auto cur = g.offsets.find(tp);
        if (cur == g.offsets.end() || cur->second.log_order < c.log_order) g.offsets[tp] = c;
      }
    }
    g.pending_txn_offsets.erase(txn);
  }
  txn_groups_.erase(groups);
}

std::map<std::string, Group>::iterator GroupCoordinator::ForgetGroup(
    std::map<std::string, Group>::iterator it) {
  for (const auto& [pid, txn] : it->second.pending_txn_offsets) {
    auto groups = txn_groups_.find(pid);
    if (groups == txn_groups_.end()) continue;
    groups->second.erase(it->first);
    if (groups->second.empty()) txn_groups_.erase(groups);
  }
  return groups_.erase(it);
}

}  // namespace headrace::broker::group
