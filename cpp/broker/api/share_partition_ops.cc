#include "broker/api/share_partition_ops.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <mutex>

#include "broker/api/authorize.h"
#include "broker/coordinator/group/group_config.h"
#include "broker/coordinator/group/group_config_store.h"
#include "broker/coordinator/group/group_resource_config.h"

namespace headrace::broker {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

uint64_t BigEndian(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

ShareRefusal CheckShareMember(const BrokerContext& ctx, const Request& req,
                              const std::string& group, const std::string& member) {
  if (!AuthorizedOnGroup(ctx, req, AclOperation::kRead, group)) {
    return {KafkaError::kGroupAuthorizationFailed, std::nullopt};
  }
  if (group.empty()) return {KafkaError::kInvalidRequest, "GroupId can't be empty."};
  if (member.empty()) return {KafkaError::kInvalidRequest, "MemberId can't be empty."};
  if (ctx.share_partitions == nullptr || ctx.share_sessions == nullptr) {
    return {KafkaError::kShareSessionNotFound, std::nullopt};
  }
  return {};
}

KafkaError ShareSessionError(share::SessionOutcome outcome) {
  switch (outcome) {
    case share::SessionOutcome::kOk: return KafkaError::kNone;
    case share::SessionOutcome::kNotFound: return KafkaError::kShareSessionNotFound;
    case share::SessionOutcome::kInvalidEpoch: return KafkaError::kInvalidShareSessionEpoch;
    case share::SessionOutcome::kLimitReached: return KafkaError::kShareSessionLimitReached;
  }
  return KafkaError::kUnknownServerError;
}

ShareTarget ResolveShareTarget(BrokerContext& ctx, const Request& req, const Uuid& topic_id,
                               int32_t index) {
  ShareTarget t;
  t.topic_id = topic_id;
  t.index = index;
  std::shared_ptr<const Topic> topic = topic_id.is_zero() ? nullptr
                                                          : ctx.topics().FindTopicById(topic_id);
  int32_t partitions = topic ? topic->partition_count() : 0;
  if (topic) {
    t.topic = topic->name;
  } else if (ClusterState* cluster = ctx.state->cluster()) {
    auto view = cluster->view();
    if (const TopicView* v = view->FindTopicById(topic_id)) {
      t.topic = v->name;
      partitions = static_cast<int32_t>(v->partitions.size());
    }
  }
  if (!AuthorizedOnTopic(ctx, req, AclOperation::kRead, t.topic)) {
    t.error = KafkaError::kTopicAuthorizationFailed;
  } else if (t.topic.empty()) {
    t.error = KafkaError::kUnknownTopicId;
  } else if (index < 0 || index >= partitions) {
    t.error = KafkaError::kUnknownTopicOrPartition;
  } else if (!topic || !topic->partitions[index] || !topic->partitions[index]->is_leader()) {
    t.error = KafkaError::kNotLeaderOrFollower;  // no replica here, or a follower
  } else {
    t.partition = topic->partitions[index];
  }
  return t;
}

namespace {

group::EffectiveGroupSettings SettingsOf(const BrokerContext& ctx, const std::string& group) {
  return group::EffectiveSettingsOf(
      ctx.group_configs ? ctx.group_configs->Get(group) : ConfigMap{}, *ctx.group_config);
}

}  // namespace

share::SharePartitionConfig SharePartitionConfigOf(const BrokerContext& ctx,
                                                   const std::string& group) {
  share::SharePartitionConfig c;
  if (ctx.group_config != nullptr) {
    const group::EffectiveGroupSettings s = SettingsOf(ctx, group);
    c.record_lock_duration_ms = s.share_record_lock_duration_ms;
    c.delivery_count_limit = s.share_delivery_count_limit;
    c.max_in_flight_records = s.share_partition_max_record_locks;
  }
  return c;
}

int64_t ShareStartOffset(const BrokerContext& ctx, const std::string& group,
                         const Partition& partition) {
  const int64_t hw = partition.high_watermark().value();
  if (ctx.group_config == nullptr) return hw;
  const group::ShareAutoOffsetReset reset = SettingsOf(ctx, group).share_auto_offset_reset;
  switch (reset.kind) {
    case group::ShareAutoOffsetReset::Kind::kLatest:
      return hw;
    case group::ShareAutoOffsetReset::Kind::kEarliest:
      return std::min(partition.log_start_offset().value(), hw);
    case group::ShareAutoOffsetReset::Kind::kByDuration: {
      auto found = partition.ListOffset(std::max<int64_t>(NowMs() - reset.duration_ms, 0),
                                        IsolationLevel::kReadUncommitted);
      if (found.ok() && found->offset.value() >= 0) return std::min(found->offset.value(), hw);
      return hw;  // no record that recent: latest, as Kafka
    }
  }
  return hw;
}

KafkaError ApplyAcknowledgements(BrokerContext& ctx, const std::string& group,
                                 const std::string& member, const ShareTarget& target,
                                 const std::vector<AckBatch>& batches) {
  if (target.error != KafkaError::kNone) return target.error;
  if (ctx.share_partitions == nullptr) return KafkaError::kInvalidRecordState;
  std::shared_ptr<share::ShareRegistry::Entry> e =
      ctx.share_partitions->Find({group, target.topic_id, target.index});
  if (!e) return KafkaError::kInvalidRecordState;  // nothing was ever acquired here
  std::lock_guard<std::mutex> lock(e->mu);
  if (!e->state) return KafkaError::kInvalidRecordState;
  const int64_t now = NowMs();
  e->state->ExpireLocks(now);
  for (const AckBatch& b : batches) {
    switch (e->state->Acknowledge(member, b.first, b.last, b.types, now)) {
      case share::AckOutcome::kOk:
        break;
      case share::AckOutcome::kInvalidRecordState:
        return KafkaError::kInvalidRecordState;
      case share::AckOutcome::kInvalidRequest:
        return KafkaError::kInvalidRequest;
    }
  }
  return KafkaError::kNone;
}

int64_t LastOffsetIn(const std::vector<FileSlice>& slices) {
  // A v2 batch header: base offset (8), length (4) counting from the next
  // byte, leader epoch (4), magic (1), crc (4), attributes (2), last
  // offset delta (4).
  constexpr int kHeader = 27;
  int64_t last = -1;
  for (const FileSlice& s : slices) {
    int64_t pos = s.position.value();
    const int64_t end = pos + s.length;
    while (pos + kHeader <= end) {
      uint8_t h[kHeader];
      if (::pread(s.fd, h, kHeader, pos) != kHeader) return -1;
      const int64_t base = static_cast<int64_t>(BigEndian(h, 8));
      const int64_t length = static_cast<int32_t>(BigEndian(h + 8, 4));
      const int64_t delta = static_cast<int32_t>(BigEndian(h + 23, 4));
      if (length <= 0) return -1;
      last = base + delta;
      pos += 12 + length;
    }
  }
  return last;
}

ShareRead AcquireAndRead(BrokerContext& ctx, const std::string& group, const std::string& member,
                         const ShareTarget& target, int32_t max_records, int64_t* budget) {
  ShareRead out;
  if (target.error != KafkaError::kNone) {
    out.error = target.error;
    return out;
  }
  const std::shared_ptr<Partition>& partition = target.partition;
  if (!partition->is_leader()) {  // leadership moved since the request arrived
    out.error = KafkaError::kNotLeaderOrFollower;
    return out;
  }
  out.state_version = partition->state_version();
  const int64_t hw = partition->high_watermark().value();
  out.high_watermark = hw;
  std::shared_ptr<share::ShareRegistry::Entry> e =
      ctx.share_partitions->Get({group, target.topic_id, target.index});
  std::lock_guard<std::mutex> lock(e->mu);
  const share::SharePartitionConfig config = SharePartitionConfigOf(ctx, group);
  share::SharePartition& sp =
      e->state ? *e->state : e->Ensure(config, ShareStartOffset(ctx, group, *partition));
  sp.set_config(config);  // the group's current configs, as Kafka reads them per acquisition
  const int64_t now = NowMs();
  sp.ExpireLocks(now);
  const int64_t log_start = partition->log_start_offset().value();
  if (sp.start_offset() < log_start && sp.next_offset() > sp.start_offset()) {
    sp.ArchiveGaps(sp.start_offset(), std::min(log_start, sp.next_offset()) - 1);  // deleted
  }
  std::vector<share::AcquiredRange> ranges =
      sp.Acquire(member, hw, std::max(max_records, 1), now);
  std::sort(ranges.begin(), ranges.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  int64_t covered = -1;  // the last offset of the batches read so far
  for (const share::AcquiredRange& r : ranges) {
    int64_t pos = std::max(r.first, covered + 1);
    while (pos <= r.last) {
      Result<PartitionRead> read = partition->Read(
          Offset(pos), std::max<int64_t>(*budget, 1), IsolationLevel::kReadUncommitted, true);
      if (!read.ok() || read->data.bytes == 0) {
        // The log holds nothing from pos on (deleted by retention or
        // DeleteRecords, compacted away): gaps, never delivered.
        if (!read.ok() && read.status().code() != StatusCode::kOutOfRange) break;
        sp.ArchiveGaps(pos, r.last);
        break;
      }
      const int64_t last = LastOffsetIn(read->data.slices);
      if (last < pos) break;  // unreadable headers: left acquired, redelivered at lock expiry
      *budget = std::max<int64_t>(*budget - read->data.bytes, 0);
      out.bytes += read->data.bytes;
      for (FileSlice& s : read->data.slices) out.slices.push_back(std::move(s));
      covered = last;
      pos = last + 1;
    }
    const int64_t sent_last = std::min(r.last, covered);
    if (sent_last >= r.first) out.acquired.push_back({r.first, sent_last, r.delivery_count});
  }
  return out;
}

}  // namespace headrace::broker
