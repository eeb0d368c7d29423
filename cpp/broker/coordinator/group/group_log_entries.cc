#include "broker/coordinator/group/group_log_entries.h"

#include <algorithm>
#include <tuple>

#include "broker/coordinator/group/consumer_group_records.h"
#include "broker/coordinator/group/group_records.h"

namespace headrace::broker::group {

GroupLog::Entry OffsetEntry(const std::string& group, const TopicPartitionKey& tp,
                            const std::optional<CommittedOffset>& c) {
  GroupLog::Entry e;
  e.key = EncodeKey(RecordKey{RecordKind::kOffset, group, tp.first, tp.second});
  if (c)
    e.value = EncodeOffsetValue(OffsetValue{c->offset, c->leader_epoch, c->metadata,
                                            c->commit_time_ms});
  return e;
}

GroupLog::Entry GroupEntry(const Group& g) {
  GroupValue v;
  v.protocol_type = g.protocol_type;
  v.generation = g.generation;
  v.protocol = g.protocol;
  v.leader = g.leader;
  v.state_time_ms = g.state_time_ms;
  for (const auto& [id, m] : g.members)
    v.members.push_back(StoredMember{id, m.instance_id, m.client_id, m.client_host,
                                     m.session_timeout_ms, m.rebalance_timeout_ms,
                                     m.MetadataFor(g.protocol), m.assignment});
  return GroupLog::Entry{EncodeKey(RecordKey{RecordKind::kGroup, g.id, "", 0}),
                         EncodeGroupValue(v)};
}

GroupLog::Entry GroupTombstone(const std::string& group) {
  return GroupLog::Entry{EncodeKey(RecordKey{RecordKind::kGroup, group, "", 0}), std::nullopt};
}

GroupLog::Entry PendingTxnOffsetEntry(const std::string& group, int64_t producer_id,
                                      int16_t producer_epoch, const TopicPartitionKey& tp,
                                      const std::optional<CommittedOffset>& c) {
  GroupLog::Entry e;
  e.key = EncodeKey(
      RecordKey{RecordKind::kPendingTxnOffset, group, tp.first, tp.second, producer_id});
  if (c)
    e.value = EncodePendingTxnOffsetValue(PendingTxnOffsetValue{
        producer_epoch, OffsetValue{c->offset, c->leader_epoch, c->metadata, c->commit_time_ms}});
  return e;
}

GroupLog::Entry TxnEndEntry(int64_t producer_id, const TxnEndValue& end) {
  RecordKey key;
  key.kind = RecordKind::kTxnEnd;
  key.producer_id = producer_id;
  return GroupLog::Entry{EncodeKey(key), EncodeTxnEndValue(end)};
}

void AppendLiveEntries(const Group& g, std::vector<GroupLog::Entry>* out) {
  if (g.is_consumer) AppendConsumerGroupLiveEntries(g.id, g.consumer, out);
  else if (!g.protocol_type.empty() || g.generation > 0) out->push_back(GroupEntry(g));
  // (log order, producer id or -1 for committed, partition)
  std::vector<std::tuple<int64_t, int64_t, const TopicPartitionKey*, const CommittedOffset*>> all;
  for (const auto& [tp, c] : g.offsets) all.emplace_back(c.log_order, -1, &tp, &c);
  for (const auto& [pid, txn] : g.pending_txn_offsets)
    for (const auto& [tp, c] : txn.offsets) all.emplace_back(c.log_order, pid, &tp, &c);
  std::sort(all.begin(), all.end(),
            [](const auto& a, const auto& b) { return std::get<0>(a) < std::get<0>(b); });
  for (const auto& [order, pid, tp, c] : all) {
    if (pid < 0) out->push_back(OffsetEntry(g.id, *tp, *c));
    else
      out->push_back(PendingTxnOffsetEntry(g.id, pid, g.pending_txn_offsets.at(pid).producer_epoch,
                                           *tp, *c));
  }
}

}  // namespace headrace::broker::group
