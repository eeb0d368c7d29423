#include "broker/api/share_partition_ops.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <optional>

#include "broker/api/authorize.h"
#include "broker/coordinator/group/group_config.h"
#include "broker/coordinator/group/group_config_store.h"
#include "broker/coordinator/group/group_resource_config.h"
#include "log/aborted_filter.h"
#include "log/record_batch_internal.h"

namespace headrace::broker {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Calls fn(header, fd, position) for each record batch of `slices` in log
// order, reading only the headers (pread). False when a header cannot be
// read or is not a batch's (the walk stops there).
template <typename Fn>
bool ForEachBatchHeader(const std::vector<FileSlice>& slices, Fn fn) {
  for (const FileSlice& s : slices) {
    int64_t pos = s.position.value();
    const int64_t end = pos + s.length;
    while (pos + kBatchHeaderSize <= end) {
      uint8_t raw[kBatchHeaderSize];
      if (::pread(s.fd, raw, kBatchHeaderSize, pos) != kBatchHeaderSize) return false;
      const BatchHeader h = batch::DecodeHeader(raw);
      if (h.batch_length < batch::kMinBatchLength) return false;
      fn(h, s.fd, pos);
      pos += h.total_size();
    }
  }
  return true;
}

// The offset ranges ([first, last]) of the data batches of `slices` that a
// read_committed reader skips as aborted (AbortedFilter over `aborted`, the
// reads' aborted-transactions lists), in log order. A control batch is read
// whole for its marker (a few dozen bytes); an unreadable one counts as a
// COMMIT, leaving its producer's later batches aborted, never delivered.
std::vector<std::pair<int64_t, int64_t>> AbortedRangesIn(
    const std::vector<FileSlice>& slices, const std::vector<AbortedTransaction>& aborted) {
  std::vector<std::pair<int64_t, int64_t>> out;
  if (aborted.empty()) return out;
  AbortedFilter filter(aborted);
  std::string control;
  ForEachBatchHeader(slices, [&](const BatchHeader& h, int fd, int64_t pos) {
    std::span<const uint8_t> batch;
    if (h.is_control() && h.total_size() <= 4096) {
      control.resize(static_cast<size_t>(h.total_size()));
      if (::pread(fd, control.data(), control.size(), pos) ==
          static_cast<ssize_t>(control.size())) {
        batch = {reinterpret_cast<const uint8_t*>(control.data()), control.size()};
      }
    }
    if (filter.Skip(batch, h) && !h.is_control()) {
      out.emplace_back(h.base_offset.value(), h.last_offset().value());
    }
  });
  return out;
}

// `ranges` minus the offsets of `cut` (both sorted by first offset).
std::vector<share::AcquiredRange> Subtract(const std::vector<share::AcquiredRange>& ranges,
                                           const std::vector<std::pair<int64_t, int64_t>>& cut) {
  std::vector<share::AcquiredRange> out;
  for (share::AcquiredRange r : ranges) {
    for (const auto& [first, last] : cut) {
      if (last < r.first || first > r.last) continue;
      if (first > r.first) out.push_back({r.first, first - 1, r.delivery_count});
      r.first = last + 1;
      if (r.first > r.last) break;
    }
    if (r.first <= r.last) out.push_back(r);
  }
  return out;
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

// The group's effective settings; null where this broker serves no groups.
std::optional<group::EffectiveGroupSettings> SettingsOf(const BrokerContext& ctx,
                                                        const std::string& group) {
  if (ctx.group_config == nullptr) return std::nullopt;
  return group::EffectiveSettingsOf(
      ctx.group_configs ? ctx.group_configs->Get(group) : ConfigMap{}, *ctx.group_config);
}

share::SharePartitionConfig ConfigFrom(const std::optional<group::EffectiveGroupSettings>& s) {
  share::SharePartitionConfig c;
  if (s) {
    c.record_lock_duration_ms = s->share_record_lock_duration_ms;
    c.delivery_count_limit = s->share_delivery_count_limit;
    c.max_in_flight_records = s->share_partition_max_record_locks;
  }
  return c;
}

// Where a new share-partition starts, by share.auto.offset.reset: latest =
// the high watermark, earliest = the log start offset, by_duration:D = the
// first record with a timestamp at or after now - D (the high watermark
// when there is none).
int64_t ShareStartOffset(const group::ShareAutoOffsetReset& reset, const Partition& partition) {
  const int64_t hw = partition.high_watermark().value();
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

}  // namespace

share::SharePartitionConfig SharePartitionConfigOf(const BrokerContext& ctx,
                                                   const std::string& group) {
  return ConfigFrom(SettingsOf(ctx, group));
}

KafkaError ApplyAcknowledgements(BrokerContext& ctx, const std::string& group,
                                 const std::string& member, const ShareTarget& target,
                                 const std::vector<AckBatch>& batches, ShareWaits* waits) {
  if (target.error != KafkaError::kNone) return target.error;
  if (ctx.share_partitions == nullptr) return KafkaError::kInvalidRecordState;
  const share::SharePartitionKey key{group, target.topic_id, target.index};
  std::shared_ptr<share::ShareRegistry::Entry> e = ctx.share_partitions->Find(key);
  if (!e) return KafkaError::kInvalidRecordState;  // nothing was ever acquired here
  std::unique_lock<std::mutex> lock(e->mu);
  if (!e->state) return KafkaError::kInvalidRecordState;
  if (e->leader_epoch != target.partition->leader_epoch().value()) {
    e->state.reset();  // acquired under another leadership: loaded again by the next fetch
    return KafkaError::kInvalidRecordState;
  }
  const int64_t now = NowMs();
  e->state->ExpireLocks(now);
  KafkaError error = KafkaError::kNone;
  size_t applied = 0;
  for (const AckBatch& b : batches) {
    const share::AckOutcome outcome = e->state->Acknowledge(member, b.first, b.last, b.types, now);
    if (outcome == share::AckOutcome::kOk) {
      ++applied;
      continue;
    }
    error = outcome == share::AckOutcome::kInvalidRecordState ? KafkaError::kInvalidRecordState
                                                              : KafkaError::kInvalidRequest;
    break;
  }
  if (applied > 0) {
    // Under the entry's mutex: the coordinator gets this partition's
    // snapshots in the order they were taken.
    ShareStatePersist p = PersistSharePartition(ctx, key, *e);
    waits->Add(p);
    // A newer state (AlterShareGroupOffsets, another leader) fenced the
    // write: this share-partition is read again by the next fetch.
    auto fenced = [](KafkaError f) {
      return f == KafkaError::kFencedStateEpoch || f == KafkaError::kFencedLeaderEpoch;
    };
    if (fenced(p.error)) e->state.reset();
    if (p.pending) {
      ++e->writes_in_flight;
      // Registered without the entry's mutex: a pending already complete
      // runs the callback at once.
      lock.unlock();
      std::weak_ptr<share::ShareRegistry::Entry> weak = e;
      p.pending->Then([weak, fenced](KafkaError f) {
        if (auto entry = weak.lock()) {
          std::lock_guard<std::mutex> l(entry->mu);
          --entry->writes_in_flight;
          if (fenced(f)) entry->state.reset();
        }
      });
    }
    if (p.error != KafkaError::kNone && error == KafkaError::kNone) error = p.error;
  }
  return error;
}

int64_t LastOffsetIn(const std::vector<FileSlice>& slices) {
  int64_t last = -1;
  const bool ok = ForEachBatchHeader(
      slices, [&](const BatchHeader& h, int, int64_t) { last = h.last_offset().value(); });
  return ok ? last : -1;
}

ShareRead AcquireAndRead(BrokerContext& ctx, const std::string& group, const std::string& member,
                         const ShareTarget& target, int32_t max_records, int64_t* budget,
                         bool revalidate) {
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
  // The group's settings, read once per acquisition (as Kafka reads them).
  const std::optional<group::EffectiveGroupSettings> settings = SettingsOf(ctx, group);
  const bool read_committed = settings && settings->share_read_committed;
  const int64_t fetchable_end =
      read_committed ? std::min(partition->last_stable_offset().value(), hw) : hw;
  out.bound = read_committed ? Watermark::kLastStable : Watermark::kHighWatermark;
  out.bound_offset = fetchable_end;
  const IsolationLevel isolation =
      read_committed ? IsolationLevel::kReadCommitted : IsolationLevel::kReadUncommitted;
  std::vector<AbortedTransaction> aborted;  // read_committed: the reads' lists
  const share::SharePartitionKey key{group, target.topic_id, target.index};
  std::shared_ptr<share::ShareRegistry::Entry> e = ctx.share_partitions->Get(key);
  std::lock_guard<std::mutex> lock(e->mu);
  const share::SharePartitionConfig config = ConfigFrom(settings);
  const ShareLoad load = EnsureSharePartition(
      ctx, key, e, config, partition->leader_epoch().value(), revalidate,
      [&] {
        return ShareStartOffset(settings ? settings->share_auto_offset_reset
                                         : group::ShareAutoOffsetReset{},
                                *partition);
      },
      &out.created);
  if (out.created.error != KafkaError::kNone) {
    out.error = out.created.error;  // its start could not be stored: tried again next time
    return out;
  }
  if (load == ShareLoad::kLoading) {
    out.loading = true;
    return out;
  }
  share::SharePartition& sp = *e->state;
  sp.set_config(config);  // the group's current configs
  const int64_t now = NowMs();
  sp.ExpireLocks(now);
  const int64_t log_start = partition->log_start_offset().value();
  if (sp.start_offset() < log_start && sp.next_offset() > sp.start_offset()) {
    sp.ArchiveGaps(sp.start_offset(), std::min(log_start, sp.next_offset()) - 1);  // deleted
  }
  std::vector<share::AcquiredRange> ranges =
      sp.Acquire(member, fetchable_end, std::max(max_records, 1), now);
  std::sort(ranges.begin(), ranges.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  int64_t covered = -1;  // the last offset of the batches read so far
  for (const share::AcquiredRange& r : ranges) {
    int64_t pos = std::max(r.first, covered + 1);
    while (pos <= r.last) {
      Result<PartitionRead> read =
          partition->Read(Offset(pos), std::max<int64_t>(*budget, 1), isolation, true);
      if (!read.ok() || read->data.bytes == 0) {
        // The log holds nothing from pos on (deleted by retention or
        // DeleteRecords, compacted away): gaps, never delivered.
        if (!read.ok() && read.status().code() != StatusCode::kOutOfRange) break;
        sp.ArchiveGaps(pos, r.last);
        break;
      }
      const int64_t last = LastOffsetIn(read->data.slices);
      if (last < pos) break;  // unreadable headers: left acquired, redelivered at lock expiry
      for (const AbortedTxn& a : read->aborted_transactions)
        aborted.push_back({a.producer_id, a.first_offset.value()});
      *budget = std::max<int64_t>(*budget - read->data.bytes, 0);
      out.bytes += read->data.bytes;
      for (FileSlice& s : read->data.slices) out.slices.push_back(std::move(s));
      covered = last;
      pos = last + 1;
    }
    const int64_t sent_last = std::min(r.last, covered);
    if (sent_last >= r.first) out.acquired.push_back({r.first, sent_last, r.delivery_count});
  }
  if (read_committed) {
    // Records of aborted transactions are archived, never delivered; the
    // batches stay in the response (the client keeps only acquired records).
    const auto cut = AbortedRangesIn(out.slices, aborted);
    for (const auto& [first, last] : cut) {
      for (const share::AcquiredRange& r : out.acquired) {
        const int64_t a = std::max(first, r.first), b = std::min(last, r.last);
        if (a <= b) sp.ArchiveGaps(a, b);
      }
    }
    out.acquired = Subtract(out.acquired, cut);
  }
  return out;
}

}  // namespace headrace::broker
