#include "broker/replication/leader_fetcher.h"

#include <algorithm>
#include <span>

#include "broker/base/kafka_error.h"
#include "broker/replication/replication_quota.h"
#include "common/logging.h"
#include "headrace/record_batch.h"

namespace headrace::broker::replication {
namespace {

// Versions sent: the first that carry what the fetcher needs (replica_id,
// current_leader_epoch; for Fetch also last_fetched_epoch / diverging_epoch
// and topic names) and that the broker's handlers support.
constexpr int16_t kFetchVersion = 12;
constexpr int16_t kOffsetForLeaderEpochVersion = 3;

// The whole batches at the start of `bytes` from `leo` on: batches wholly
// below `leo` are skipped (a leader answers from the batch holding the fetch
// offset) and a partial batch at the end (a size-limited answer) is cut.
std::span<uint8_t> BatchesFrom(std::span<uint8_t> bytes, Offset leo, int64_t* records) {
  size_t begin = 0, end = 0;
  *records = 0;
  while (end < bytes.size()) {
    Result<BatchHeader> h = ParseBatchHeader(bytes.subspan(end));
    if (!h.ok()) break;
    const size_t size = static_cast<size_t>(h->total_size());
    if (h->last_offset() < leo) {
      begin = end + size;
    } else {
      *records += h->record_count;
    }
    end += size;
  }
  return bytes.subspan(begin, end - begin);
}

// The topic entry named `name` in a request's topic list, added on first use.
template <typename Topic>
Topic& TopicEntry(std::vector<Topic>& topics, std::map<std::string, size_t>& index,
                  const std::string& name) {
  auto [it, added] = index.emplace(name, topics.size());
  if (added) topics.emplace_back().topic = name;
  return topics[it->second];
}

}  // namespace

LeaderFetcher::LeaderFetcher(int32_t local_broker_id, LeaderEndpoint leader,
                             const ReplicaFetcherConfig& config, ReplicaFetcherCounters* counters)
    : local_broker_id_(local_broker_id),
      leader_(std::move(leader)),
      config_(config),
      counters_(counters),
      conn_("headrace-replica-" + std::to_string(local_broker_id), config.security),
      errors_("replica fetcher for leader " + std::to_string(leader_.id) + " (" + leader_.host +
              ":" + std::to_string(leader_.port) + "): "),
      thread_([this] { Run(); }) {}

LeaderFetcher::~LeaderFetcher() { Stop(); }

void LeaderFetcher::SetPartitions(std::vector<std::shared_ptr<Partition>> partitions) {
  std::lock_guard<std::mutex> l(mu_);
  assigned_ = std::move(partitions);
  ++generation_;
  cv_.notify_all();
}

bool LeaderFetcher::ReplacePartition(const Partition* old, const std::shared_ptr<Partition>& now) {
  std::lock_guard<std::mutex> l(mu_);
  for (auto& p : assigned_) {
    if (p.get() != old) continue;
    p = now;
    ++generation_;
    cv_.notify_all();
    return true;
  }
  return false;
}

void LeaderFetcher::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  conn_.Interrupt();
  if (thread_.joinable()) thread_.join();
}

bool LeaderFetcher::Refresh() {
  std::vector<std::shared_ptr<Partition>> assigned;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stopping_) return false;
    if (generation_ != seen_generation_) {
      seen_generation_ = generation_;
      assigned = assigned_;
      std::map<const Partition*, Followed> next;
      for (auto& p : assigned) {
        auto it = followed_.find(p.get());
        if (it != followed_.end()) {
          next.emplace(p.get(), std::move(it->second));
        } else {
          Followed f;
          f.partition = p;
          f.epoch = p->leader_epoch();
          next.emplace(p.get(), std::move(f));
        }
      }
      followed_ = std::move(next);
    }
  }
  for (auto& [key, f] : followed_) {
    const LeaderEpoch now = f.partition->leader_epoch();
    if (now != f.epoch) {  // a new assignment in a new epoch: truncate again
      f.epoch = now;
      f.needs_truncation = true;
      f.announced = false;
      f.failed = false;
      f.retry_at = {};
    }
  }
  return true;
}

bool LeaderFetcher::Stopping() {
  std::lock_guard<std::mutex> l(mu_);
  return stopping_;
}

void LeaderFetcher::WaitUntil(Clock::time_point until) {
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait_until(l, until, [&] { return stopping_ || generation_ != seen_generation_; });
}

void LeaderFetcher::PartitionError(Followed& f, const std::string& what, KafkaError error) {
  pass_had_error_ = true;
  errors_.Note(f.partition->topic_partition().ToString() + ": " + what);
  // A leader that has not applied the view naming it leader yet (the
  // control plane tells every broker on its own) answers these for a few
  // milliseconds: look again soon rather than after the whole backoff.
  const bool view_lag =
      error == KafkaError::kUnknownLeaderEpoch || error == KafkaError::kNotLeaderOrFollower;
  const int32_t ms = view_lag ? std::min(config_.fetch_backoff_ms, kViewLagRetryMs)
                              : config_.fetch_backoff_ms;
  f.retry_at = Clock::now() + std::chrono::milliseconds(ms);
}

bool LeaderFetcher::Throttled(const Followed& f) const {
  return config_.follower_quota != nullptr && !config_.follower_quota->unlimited() &&
         f.partition->ReplicationThrottled(Partition::ThrottleSide::kFollower, local_broker_id_) &&
         !f.partition->InIsr(local_broker_id_);
}

void LeaderFetcher::Announce(Followed& f) {
  if (f.announced) return;
  f.announced = true;
  HR_LOG(kInfo) << "replica fetcher: " << f.partition->topic_partition().ToString()
                << " follows leader " << leader_.id << " (" << leader_.host << ":" << leader_.port
                << ") in leader epoch " << f.epoch.value() << " from offset "
                << f.partition->log_end_offset().value();
}

// Followers whose flusher fsyncs their appends (has_flusher) pipeline their
// flushes; without one (unit tests) the fetcher flushes inline.
bool LeaderFetcher::FlushBehind(const Followed& f) {
  const Partition& p = *f.partition;
  if (!p.commit_requires_fsync() || !p.has_flusher()) return false;
  // A truncation may have moved the log end below must_flush.
  return p.flushed_offset() < std::min(f.must_flush, p.log_end_offset());
}

bool LeaderFetcher::AnyFlushPending() const {
  for (const auto& [key, f] : followed_) {
    const Partition& p = *f.partition;
    if (!f.failed && p.commit_requires_fsync() && p.has_flusher() && !p.offline() &&
        !p.is_leader() && p.flushed_offset() < p.log_end_offset()) {
      return true;
    }
  }
  return false;
}

void LeaderFetcher::Run() {
  const auto backoff = std::chrono::milliseconds(config_.fetch_backoff_ms);
  while (Refresh()) {
    const Clock::time_point now = Clock::now();
    std::vector<Followed*> ready;
    Followed* flush_blocked = nullptr;  // one waiting for its flush
    Clock::time_point next_retry = Clock::time_point::max();
    for (auto& [key, f] : followed_) {
      if (f.failed) continue;
      if (f.partition->is_leader() || f.partition->offline()) {
        // Not (or no longer) a follower: look again after a backoff.
        next_retry = std::min(next_retry, now + backoff);
        continue;
      }
      if (f.retry_at > now) {
        next_retry = std::min(next_retry, f.retry_at);
        continue;
      }
      if (Throttled(f) && config_.follower_quota->Exceeded()) {
        next_retry = std::min(next_retry, now + kThrottleRecheck);
        continue;
      }
      if (FlushBehind(f)) {
        flush_blocked = &f;
        continue;
      }
      ready.push_back(&f);
    }
    // Waiting for a flush: when nothing else can be fetched, or (once)
    // when the last fetch brought nothing new — no round trips of empty
    // answers while an fsync runs, yet other partitions are fetched after
    // one slice even if this fsync never ends.
    if (flush_blocked != nullptr &&
        (ready.empty() || (!last_round_appended_ && !waited_for_flush_))) {
      const Partition& p = *flush_blocked->partition;
      p.WaitFlushed(std::min(flush_blocked->must_flush, p.log_end_offset()),
                    std::min(next_retry, now + kFlushWaitSlice));
      waited_for_flush_ = true;
      continue;
    }
    waited_for_flush_ = false;
    if (ready.empty()) {
      if (conn_.connected() && followed_.empty()) conn_.Close();
      WaitUntil(next_retry);
      continue;
    }
    if (!conn_.connected()) {
      counters_->connect_attempts.fetch_add(1, std::memory_order_relaxed);
      // Kafka's replica.socket.timeout.ms bounds the whole answer, the
      // leader's fetch.wait.max.ms hold included (it is at least that).
      Status st = conn_.Connect(leader_.host, leader_.port, config_.socket_timeout_ms,
                                std::max(config_.socket_timeout_ms, config_.fetch_wait_max_ms));
      if (!st.ok()) {
        counters_->connect_failures.fetch_add(1, std::memory_order_relaxed);
        if (Stopping()) break;
        errors_.Note(st.message());
        WaitUntil(Clock::now() + backoff);
        continue;
      }
    }
    pass_had_error_ = false;
    // Each round asks first for another partition: the leader fills an
    // answer in the order asked, so with more backlog than one answer
    // holds, a fixed order would copy the first partitions to their ends
    // before the rest got anything (Kafka's fetchers move each fetched
    // partition to the back for the same reason).
    std::rotate(ready.begin(), ready.begin() + static_cast<ptrdiff_t>(rounds_++ % ready.size()),
                ready.end());
    std::vector<Followed*> truncating, fetching;
    for (Followed* f : ready) (f->needs_truncation ? truncating : fetching).push_back(f);
    Status st = truncating.empty() ? Status::OK() : TruncateRound(truncating);
    if (st.ok()) {
      // Those whose truncation completed fetch in the same pass.
      for (Followed* f : truncating) {
        if (!f->needs_truncation && !f->failed && f->retry_at <= now) fetching.push_back(f);
      }
      if (!fetching.empty()) st = FetchRound(fetching);
    }
    if (st.ok() && !pass_had_error_) errors_.Success();
    if (!st.ok()) {
      conn_.Close();
      if (Stopping()) break;  // interrupted by Stop: not an error
      errors_.Note(st.message());
      WaitUntil(Clock::now() + backoff);
    }
  }
  conn_.Close();
}

Status LeaderFetcher::TruncateRound(const std::vector<Followed*>& list) {
  protocol::OffsetForLeaderEpochRequest req;
  req.replica_id = local_broker_id_;
  std::map<std::string, size_t> topic_index;
  Asked asked;                                // answered ones are erased
  std::map<Followed*, LeaderEpoch> asked_epoch;
  for (Followed* f : list) {
    std::vector<EpochEntry> entries = f->partition->epoch_entries();
    if (entries.empty()) {  // no epoch ever wrote here: nothing can have diverged
      f->needs_truncation = false;
      Announce(*f);
      continue;
    }
    asked[{f->partition->topic(), f->partition->partition()}] = f;
    asked_epoch[f] = entries.back().epoch;
    auto& p = TopicEntry(req.topics, topic_index, f->partition->topic()).partitions.emplace_back();
    p.partition = f->partition->partition();
    p.current_leader_epoch = f->epoch.value();
    p.leader_epoch = entries.back().epoch.value();
  }
  if (asked.empty()) return Status::OK();
  counters_->epoch_requests.fetch_add(1, std::memory_order_relaxed);
  HR_ASSIGN_OR_RETURN(protocol::OffsetForLeaderEpochResponse resp,
                      (conn_.Call<protocol::OffsetForLeaderEpochResponse>(
                          req, kOffsetForLeaderEpochVersion)));
  for (const auto& t : resp.topics) {
    for (const auto& p : t.partitions) {
      auto found = asked.find({t.topic, p.partition});
      if (found == asked.end()) continue;
      Followed* f = found->second;
      asked.erase(found);
      if (f->partition->leader_epoch() != f->epoch) continue;  // reassigned meanwhile
      if (p.error_code != 0) {
        PartitionError(*f, std::string("OffsetForLeaderEpoch: ") +
                               KafkaErrorName(static_cast<KafkaError>(p.error_code)),
                       static_cast<KafkaError>(p.error_code));
        continue;
      }
      Result<TruncationResult> cut =
          f->partition->TruncateByEpoch(LeaderEpoch(p.leader_epoch), Offset(p.end_offset));
      if (!cut.ok()) {
        if (f->partition->offline()) f->failed = true;
        PartitionError(*f, "truncation: " + cut.status().ToString());
        continue;
      }
      std::vector<EpochEntry> after = f->partition->epoch_entries();
      const LeaderEpoch latest = after.empty() ? LeaderEpoch(-1) : after.back().epoch;
      // Not completed: ask again with the older epoch now latest — unless
      // the cut left the asked epoch in place (it wrote nothing here).
      if (cut->completed || latest == asked_epoch[f]) {
        f->needs_truncation = false;
        Announce(*f);
      }
    }
  }
  for (auto& [key, f] : asked) PartitionError(*f, "OffsetForLeaderEpoch: no answer for it");
  return Status::OK();
}

Status LeaderFetcher::FetchRound(const std::vector<Followed*>& list) {
  protocol::FetchRequest req;
  req.replica_id = local_broker_id_;
  req.headrace_replica_epoch = counters_->broker_epoch.load();
  // A flush in progress will move a flushed offset the leader waits for:
  // answer at once, and the next fetch (after the flush) reports it.
  req.max_wait_ms = AnyFlushPending() ? 0 : config_.fetch_wait_max_ms;
  req.min_bytes = config_.fetch_min_bytes;
  req.max_bytes = config_.fetch_response_max_bytes;
  req.isolation_level = 0;
  req.session_id = 0;
  req.session_epoch = -1;  // full fetch, no session (KIP-227)
  std::map<std::string, size_t> topic_index;
  Asked asked;  // answered ones are erased
  std::map<Followed*, Offset> sent_offset;
  for (Followed* f : list) {
    const Offset leo = f->partition->log_end_offset();
    sent_offset[f] = leo;
    asked[{f->partition->topic(), f->partition->partition()}] = f;
    auto& p = TopicEntry(req.topics, topic_index, f->partition->topic()).partitions.emplace_back();
    p.partition = f->partition->partition();
    p.current_leader_epoch = f->epoch.value();
    p.fetch_offset = leo.value();
    p.last_fetched_epoch =
        leo > f->partition->log_start_offset() ? f->partition->EpochAt(leo - 1).value() : -1;
    p.log_start_offset = f->partition->log_start_offset().value();
    // With headrace.acks.all.fsync the leader's HW waits for this (read
    // after the log end: never above it); otherwise it is left out and the
    // fetch offset stands for it, as from any other follower.
    if (f->partition->commit_requires_fsync()) {
      p.headrace_flushed_offset = std::min(f->partition->flushed_offset(), leo).value();
    }
    p.partition_max_bytes = config_.fetch_max_bytes;
    if (Throttled(*f)) {
      p.partition_max_bytes = static_cast<int32_t>(std::min<int64_t>(
          p.partition_max_bytes, config_.follower_quota->MaxReadBytes()));
    }
  }
  counters_->fetch_requests.fetch_add(1, std::memory_order_relaxed);
  HR_ASSIGN_OR_RETURN(protocol::FetchResponse resp,
                      (conn_.Call<protocol::FetchResponse>(req, kFetchVersion)));
  if (resp.error_code != 0) {
    for (Followed* f : list) {
      PartitionError(*f, std::string("Fetch: ") +
                             KafkaErrorName(static_cast<KafkaError>(resp.error_code)));
    }
    return Status::OK();
  }
  std::vector<Followed*> to_flush;
  last_round_appended_ = false;
  for (auto& t : resp.responses) {
    for (auto& p : t.partitions) {
      auto found = asked.find({t.topic, p.partition_index});
      if (found == asked.end()) continue;
      Followed* f = found->second;
      asked.erase(found);
      Partition& partition = *f->partition;
      if (partition.leader_epoch() != f->epoch) continue;  // reassigned meanwhile
      const KafkaError error = static_cast<KafkaError>(p.error_code);
      if (error == KafkaError::kOffsetOutOfRange) {
        const Offset leo = partition.log_end_offset();
        if (p.log_start_offset >= 0 && leo < Offset(p.log_start_offset)) {
          HR_LOG(kWarn) << "replica fetcher: " << partition.topic_partition().ToString()
                        << " ends at " << leo.value() << ", below leader " << leader_.id
                        << "'s log start " << p.log_start_offset
                        << ": emptying the log and following from there";
          Status st = partition.TruncateFullyAndStartAt(Offset(p.log_start_offset));
          if (!st.ok()) {
            if (partition.offline()) f->failed = true;
            PartitionError(*f, "full truncation: " + st.ToString());
          }
        } else {
          f->needs_truncation = true;  // past the leader's end: truncate again
          PartitionError(*f, "Fetch at " + std::to_string(leo.value()) + ": OFFSET_OUT_OF_RANGE");
        }
        continue;
      }
      if (error != KafkaError::kNone) {
        PartitionError(*f, std::string("Fetch: ") + KafkaErrorName(error), error);
        continue;
      }
      if (p.diverging_epoch.epoch >= 0 || p.diverging_epoch.end_offset >= 0) {
        const Offset before = partition.log_end_offset();
        Result<TruncationResult> cut = partition.TruncateByEpoch(
            LeaderEpoch(p.diverging_epoch.epoch), Offset(p.diverging_epoch.end_offset));
        if (!cut.ok()) {
          if (partition.offline()) f->failed = true;
          PartitionError(*f, "truncation: " + cut.status().ToString());
        } else if (!cut->completed) {
          f->needs_truncation = true;
        } else if (cut->truncated_to >= before) {
          // Nothing to cut and yet diverged: settle it by OffsetForLeaderEpoch,
          // after a backoff (never the same fetch again at once).
          f->needs_truncation = true;
          PartitionError(*f, "diverging epoch " + std::to_string(p.diverging_epoch.epoch) +
                                 " ending at " + std::to_string(p.diverging_epoch.end_offset) +
                                 " cut nothing");
        }
        continue;
      }
      // Nothing new: everything appended is flushed before the next
      // (long-poll) fetch; new data: everything before it (FlushBehind).
      f->must_flush = partition.log_end_offset();
      if (!p.records.is_null && !p.records.data.empty()) {
        int64_t records = 0;
        std::span<uint8_t> batches =
            BatchesFrom(p.records.data, partition.log_end_offset(), &records);
        if (!batches.empty()) {
          Result<BatchHeader> first = ParseBatchHeader(batches);
          const Offset leo = partition.log_end_offset();
          if (first.ok() && first->base_offset < leo && leo == partition.log_start_offset()) {
            // An empty log started at the leader's log start, which lies
            // inside this batch: start at the batch instead.
            Status st = partition.TruncateFullyAndStartAt(first->base_offset);
            if (!st.ok()) {
              if (partition.offline()) f->failed = true;
              PartitionError(*f, "full truncation: " + st.ToString());
              continue;
            }
          }
          Result<AppendInfo> appended = partition.AppendAsFollower(batches, f->epoch);
          if (!appended.ok()) {
            if (partition.offline()) {
              f->failed = true;
              HR_LOG(kError) << "replica fetcher: " << partition.topic_partition().ToString()
                             << " is offline; no longer fetched: " << appended.status().ToString();
            } else {
              f->needs_truncation = true;  // not contiguous, or a new epoch
              PartitionError(*f, "append: " + appended.status().ToString());
            }
            continue;
          }
          counters_->records_appended.fetch_add(static_cast<uint64_t>(records),
                                                std::memory_order_relaxed);
          if (Throttled(*f)) config_.follower_quota->Record(static_cast<int64_t>(batches.size()));
          f->must_flush = sent_offset[f];
          last_round_appended_ = true;
          // The append scheduled the flusher; without one, flush here.
          if (partition.commit_requires_fsync() && !partition.has_flusher()) to_flush.push_back(f);
        }
      }
      partition.SetHighWatermarkFromLeader(Offset(p.high_watermark));
    }
  }
  for (auto& [key, f] : asked) PartitionError(*f, "Fetch: no answer for it");
  // No flusher: the next fetch offset is also the flushed offset.
  for (Followed* f : to_flush) {
    Status st = f->partition->FlushLog();
    if (!st.ok()) {
      f->failed = f->partition->offline();
      PartitionError(*f, "fsync: " + st.ToString());
    }
  }
  return Status::OK();
}

}  // namespace headrace::broker::replication
