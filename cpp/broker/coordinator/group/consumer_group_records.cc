#include "broker/coordinator/group/consumer_group_records.h"

#include "broker/coordinator/group/group_record_io.h"

namespace headrace::broker::group {
namespace {

using record_io::In;
using record_io::Out;

constexpr int16_t kVersion = 0;

std::string Key(RecordKind kind, const std::string& group, const std::string& member = "") {
  RecordKey k;
  k.kind = kind;
  k.group = group;
  k.member_id = member;
  return EncodeKey(k);
}

void PutPartitions(Out& o, const TopicPartitions& tps) {
  o.I32(static_cast<int32_t>(tps.size()));
  for (const auto& [topic, parts] : tps) {
    o.Str(topic);
    o.I32(static_cast<int32_t>(parts.size()));
    for (int32_t p : parts) o.I32(p);
  }
}

TopicPartitions GetPartitions(In& in) {
  TopicPartitions out;
  int32_t n = in.I32();
  for (int32_t i = 0; in.ok() && i < n; ++i) {
    std::string topic = in.Str();
    int32_t k = in.I32();
    auto& set = out[topic];
    for (int32_t j = 0; in.ok() && j < k; ++j) set.insert(in.I32());
  }
  return out;
}

Out Begin() {
  Out o;
  o.I16(kVersion);
  return o;
}

Status Bad(const char* what) {
  return Status::Corruption(std::string("group log: truncated or invalid ") + what);
}

}  // namespace

GroupLog::Entry ConsumerGroupMetadataEntry(const std::string& group, int32_t epoch) {
  Out o = Begin();
  o.I32(epoch);
  return {Key(RecordKind::kConsumerGroupMetadata, group), o.Take()};
}

GroupLog::Entry ConsumerGroupPartitionMetadataEntry(
    const std::string& group, const std::map<std::string, SubscribedTopic>& topics) {
  Out o = Begin();
  o.I32(static_cast<int32_t>(topics.size()));
  for (const auto& [name, t] : topics) {
    o.Str(name);
    o.I64(static_cast<int64_t>(t.id.most_significant()));
    o.I64(static_cast<int64_t>(t.id.least_significant()));
    o.I32(t.partitions);
  }
  return {Key(RecordKind::kConsumerGroupPartitionMetadata, group), o.Take()};
}

GroupLog::Entry ConsumerGroupMemberEntry(const std::string& group, const ConsumerMember& m) {
  Out o = Begin();
  o.NullableStr(m.instance_id);
  o.NullableStr(m.rack_id);
  o.Str(m.client_id);
  o.Str(m.client_host);
  o.I32(static_cast<int32_t>(m.subscribed_topics.size()));
  for (const std::string& t : m.subscribed_topics) o.Str(t);
  o.NullableStr(m.server_assignor);
  o.I32(m.rebalance_timeout_ms);
  o.NullableStr(m.subscribed_regex);
  return {Key(RecordKind::kConsumerGroupMemberMetadata, group, m.member_id), o.Take()};
}

GroupLog::Entry ConsumerGroupTargetMetadataEntry(const std::string& group, int32_t epoch) {
  Out o = Begin();
  o.I32(epoch);
  return {Key(RecordKind::kConsumerGroupTargetAssignmentMetadata, group), o.Take()};
}

GroupLog::Entry ConsumerGroupTargetMemberEntry(const std::string& group,
                                               const std::string& member_id,
                                               const TopicPartitions& target) {
  Out o = Begin();
  PutPartitions(o, target);
  return {Key(RecordKind::kConsumerGroupTargetAssignmentMember, group, member_id), o.Take()};
}

GroupLog::Entry ConsumerGroupCurrentAssignmentEntry(const std::string& group,
                                                    const ConsumerMember& m) {
  Out o = Begin();
  o.I32(m.member_epoch);
  o.I32(m.previous_member_epoch);
  o.I8(static_cast<int8_t>(m.state));
  PutPartitions(o, m.assigned);
  PutPartitions(o, m.pending_revocation);
  return {Key(RecordKind::kConsumerGroupCurrentMemberAssignment, group, m.member_id), o.Take()};
}

void AppendConsumerMemberTombstones(const std::string& group, const std::string& member_id,
                                    std::vector<GroupLog::Entry>* out) {
  out->push_back({Key(RecordKind::kConsumerGroupCurrentMemberAssignment, group, member_id), std::nullopt});
  out->push_back({Key(RecordKind::kConsumerGroupTargetAssignmentMember, group, member_id), std::nullopt});
  out->push_back({Key(RecordKind::kConsumerGroupMemberMetadata, group, member_id), std::nullopt});
}

void AppendConsumerGroupTombstones(const std::string& group, const ConsumerGroup& cg,
                                   std::vector<GroupLog::Entry>* out) {
  for (const auto& [id, m] : cg.members) AppendConsumerMemberTombstones(group, id, out);
  out->push_back({Key(RecordKind::kConsumerGroupTargetAssignmentMetadata, group), std::nullopt});
  out->push_back({Key(RecordKind::kConsumerGroupPartitionMetadata, group), std::nullopt});
  out->push_back({Key(RecordKind::kConsumerGroupMetadata, group), std::nullopt});
}

void AppendConsumerGroupLiveEntries(const std::string& group, const ConsumerGroup& cg,
                                    std::vector<GroupLog::Entry>* out) {
  out->push_back(ConsumerGroupMetadataEntry(group, cg.group_epoch));
  out->push_back(ConsumerGroupPartitionMetadataEntry(group, cg.topics));
  for (const auto& [id, m] : cg.members) out->push_back(ConsumerGroupMemberEntry(group, m));
  out->push_back(ConsumerGroupTargetMetadataEntry(group, cg.assignment_epoch));
  for (const auto& [id, t] : cg.target) out->push_back(ConsumerGroupTargetMemberEntry(group, id, t));
  for (const auto& [id, m] : cg.members) out->push_back(ConsumerGroupCurrentAssignmentEntry(group, m));
}

Status ApplyConsumerGroupRecord(ConsumerGroup& cg, const RecordKey& key,
                                const std::optional<std::string>& value) {
  const std::string& member = key.member_id;
  if (!value) {
    switch (key.kind) {
      case RecordKind::kConsumerGroupMemberMetadata: cg.members.erase(member); break;
      case RecordKind::kConsumerGroupTargetAssignmentMember: cg.target.erase(member); break;
      case RecordKind::kConsumerGroupCurrentMemberAssignment: {
        ConsumerMember* m = cg.FindMember(member);
        if (m) {
          m->assigned.clear();
          m->pending_revocation.clear();
        }
        break;
      }
      case RecordKind::kConsumerGroupPartitionMetadata: cg.topics.clear(); break;
      default: break;  // group / target metadata tombstones: the group goes (caller)
    }
    return Status::OK();
  }
  In in(*value);
  if (in.I16() != kVersion) return Bad("consumer group record version");
  switch (key.kind) {
    case RecordKind::kConsumerGroupMetadata: cg.group_epoch = in.I32(); break;
    case RecordKind::kConsumerGroupPartitionMetadata: {
      cg.topics.clear();
      int32_t n = in.I32();
      for (int32_t i = 0; in.ok() && i < n; ++i) {
        std::string name = in.Str();
        uint64_t msb = static_cast<uint64_t>(in.I64());
        uint64_t lsb = static_cast<uint64_t>(in.I64());
        cg.topics[name] = SubscribedTopic{Uuid::FromHalves(msb, lsb), in.I32()};
      }
      break;
    }
    case RecordKind::kConsumerGroupMemberMetadata: {
      ConsumerMember& m = cg.members[member];
      m.member_id = member;
      m.has_metadata = true;
      m.instance_id = in.NullableStr();
      m.rack_id = in.NullableStr();
      m.client_id = in.Str();
      m.client_host = in.Str();
      int32_t n = in.I32();
      m.subscribed_topics.clear();
      for (int32_t i = 0; in.ok() && i < n; ++i) m.subscribed_topics.push_back(in.Str());
      m.server_assignor = in.NullableStr();
      m.rebalance_timeout_ms = in.I32();
      m.subscribed_regex = in.NullableStr();
      break;
    }
    case RecordKind::kConsumerGroupTargetAssignmentMetadata: cg.assignment_epoch = in.I32(); break;
    case RecordKind::kConsumerGroupTargetAssignmentMember: cg.target[member] = GetPartitions(in); break;
    case RecordKind::kConsumerGroupCurrentMemberAssignment: {
      ConsumerMember& m = cg.members[member];
      m.member_id = member;
      m.member_epoch = in.I32();
      m.previous_member_epoch = in.I32();
      int8_t state = in.I8();
      if (state < 0 || state > 2) return Bad("consumer member state");
      m.state = static_cast<ConsumerMemberState>(state);
      m.assigned = GetPartitions(in);
      m.pending_revocation = GetPartitions(in);
      break;
    }
    default: return Bad("consumer group record kind");
  }
  if (!in.ok() || !in.done()) return Bad("consumer group record");
  return Status::OK();
}

}  // namespace headrace::broker::group
