#include "broker/coordinator/txn/txn_coordinator.h"

#include <algorithm>
#include <chrono>

#include "common/logging.h"

namespace headrace::broker::txn {
namespace {

// How long a state change may take to become durable before the request is
// answered REQUEST_TIMED_OUT (and the client retries).
constexpr std::chrono::milliseconds kDurableTimeout{10000};
// How long AddPartitionsToTxn waits for the previous transaction's markers
// before it answers CONCURRENT_TRANSACTIONS.
constexpr int64_t kParkedMaxMs = 1000;
// Kafka bumps to a new producer id instead of passing this epoch.
constexpr int16_t kMaxEpoch = 32766;

int64_t SystemNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}


}  // namespace

Result<std::shared_ptr<TxnCoordinator>> TxnCoordinator::Open(Options options) {
  if (options.purgatory == nullptr || options.markers == nullptr ||
      options.producer_ids == nullptr) {
    return Status::InvalidArgument("transaction coordinator: purgatory, markers and ids required");
  }
  std::unique_ptr<group::GroupLog> log;
  if (options.log_partition) {
    log = group::GroupLog::Attach(options.log_partition);
  } else {
    PartitionServices services = options.log_services;
    services.commit_requires_fsync = true;  // a decision is answered once fsynced
    HR_ASSIGN_OR_RETURN(log, group::GroupLog::Open(options.data_dir, services,
                                                   options.config.log_segment_bytes, options.env,
                                                   kTxnLogDirName));
  }
  const bool start_timer = options.start_timer;
  const bool options_attached = options.log_partition != nullptr;
  std::shared_ptr<TxnCoordinator> c(new TxnCoordinator(std::move(options)));
  c->attached_ = options_attached;
  c->log_ = std::move(log);
  c->log_partition_ = c->log_->partition();
  c->coordinator_epoch_ = c->log_partition_->leader_epoch().value();
  HR_RETURN_IF_ERROR(c->Load());
  std::vector<std::string> resume;
  {
    std::lock_guard<std::mutex> lock(c->mu_);
    for (auto& [id, m] : c->txns_) {
      if (IsPrepareState(m.state)) resume.push_back(id);
    }
  }
  for (const std::string& id : resume) c->WriteMarkers(id);
  if (start_timer) c->timer_ = std::thread([raw = c.get()] { raw->TimerLoop(); });
  return c;
}

TxnCoordinator::TxnCoordinator(Options options)
    : config_(options.config),
      data_dir_(options.data_dir),
      purgatory_(options.purgatory),
      markers_(options.markers),
      producer_ids_(options.producer_ids),
      now_ms_(options.now_ms ? options.now_ms : SystemNowMs),
      executor_(options.executor ? options.executor
                                 : std::make_shared<SerialExecutor>("hr-txn-persist")) {}

TxnCoordinator::~TxnCoordinator() { Stop(); }

Status TxnCoordinator::Load() {
  std::map<std::string, TxnMetadata> loaded;
  Status bad = Status::OK();
  HR_RETURN_IF_ERROR(log_->Replay([&](const group::GroupLog::Entry& e) {
    Result<std::string> id = DecodeTxnKey(e.key);
    if (!id.ok()) {
      bad = id.status();
      return;
    }
    if (!e.value) {
      loaded.erase(*id);
      return;
    }
    Result<TxnMetadata> m = DecodeTxnValue(*e.value);
    if (!m.ok()) {
      bad = m.status();
      return;
    }
    m->transactional_id = *id;
    loaded[*id] = std::move(*m);
  }));
  if (!bad.ok()) {
    HR_LOG(kWarn) << "transaction coordinator: skipped unreadable records: " << bad.ToString();
  }
  std::lock_guard<std::mutex> lock(mu_);
  txns_ = std::move(loaded);
  for (auto& [id, m] : txns_) {
    if (IsPrepareState(m.state)) markers_pending_[id] = MarkerProgress{m.partitions, -1, 0};
  }
  const int64_t now = Now();
  next_abort_check_ms_ = now + config_.abort_check_interval_ms;
  next_expire_check_ms_ = now + config_.expire_check_interval_ms;
  // Cluster mode: one coordinator per led partition, most of them empty;
  // only the ones with something loaded say so.
  if (!txns_.empty() || !attached_) {
    HR_LOG(kInfo) << "transaction coordinator: loaded " << txns_.size()
                  << " transactional id(s), " << markers_pending_.size()
                  << " transaction(s) to complete"
                  << (attached_ ? " of " + log_partition_->topic_partition().ToString()
                                : std::string());
  }
  return Status::OK();
}

void TxnCoordinator::RunAll(After& after) {
  for (auto& fn : after) fn();
  after.clear();
}

void TxnCoordinator::PersistLocked(const TxnMetadata& next, std::function<void(KafkaError)> then,
                                   After& after) {
  if (stopped_ || !log_) {
    after.push_back([then] { then(KafkaError::kNotCoordinator); });
    return;
  }
  const std::string value = EncodeTxnValue(next);
  group::GroupLog::Entry entry{EncodeTxnKey(next.transactional_id), value};
  Status st = log_->Append({entry});
  if (!st.ok()) {
    HR_LOG(kWarn) << "transaction coordinator: cannot write the state of '"
                     << next.transactional_id << "': " << st.ToString();
    after.push_back([then] { then(KafkaError::kNotCoordinator); });
    return;
  }
  appended_since_compaction_ += static_cast<int64_t>(entry.key.size() + value.size());
  txns_[next.transactional_id] = next;
  MaybeCompactLocked();
  std::shared_ptr<Partition> log = log_partition_;
  const Offset end = log->log_end_offset();
  Purgatory* purgatory = purgatory_;
  // The waiter runs on executor_, never inline: the HW can pass `end` inside
  // a later PersistLocked's append, on a thread that holds mu_, and `then`
  // may take mu_ (WriteMarkers, parked retries).
  std::shared_ptr<SerialExecutor> executor = executor_;
  after.push_back([log, end, purgatory, executor, then] {
    if (log->high_watermark() >= end) {
      then(KafkaError::kNone);
      return;
    }
    purgatory->Wait({{log, Watermark::kHighWatermark, end}},
                    Purgatory::Clock::now() + kDurableTimeout, executor,
                    [log, end, then](WakeReason) {
                      if (log->high_watermark() >= end) then(KafkaError::kNone);
                      else if (log->offline() || !log->is_leader()) then(KafkaError::kNotCoordinator);
                      else then(KafkaError::kRequestTimedOut);
                    });
  });
}

void TxnCoordinator::RemoveLocked(const std::string& id) {
  if (!log_) return;
  Status st = log_->Append({group::GroupLog::Entry{EncodeTxnKey(id), std::nullopt}});
  if (!st.ok()) {
    HR_LOG(kWarn) << "transaction coordinator: cannot expire '" << id << "': " << st.ToString();
    return;
  }
  txns_.erase(id);
}

void TxnCoordinator::MaybeCompactLocked() {
  if (appended_since_compaction_ < config_.log_segment_bytes) return;
  std::vector<group::GroupLog::Entry> live;
  int64_t live_bytes = 0;
  for (const auto& [id, m] : txns_) {
    live.push_back({EncodeTxnKey(id), EncodeTxnValue(m)});
    live_bytes += static_cast<int64_t>(live.back().key.size() + live.back().value->size());
  }
  Status st = log_->Rewrite(live);
  if (!st.ok()) {
    HR_LOG(kWarn) << "transaction coordinator: compaction failed: " << st.ToString();
  }
  // The next compaction is due once as much again was appended (at least
  // the live state's size, so a large state is not rewritten on every append).
  appended_since_compaction_ = std::min<int64_t>(0, config_.log_segment_bytes - live_bytes);
}

KafkaError TxnCoordinator::CheckProducerLocked(const TxnMetadata* m, int64_t producer_id,
                                               int16_t epoch) const {
  if (stopped_) return KafkaError::kNotCoordinator;
  if (m == nullptr || m->producer_id != producer_id) return KafkaError::kInvalidProducerIdMapping;
  if (m->producer_epoch != epoch) return KafkaError::kProducerFenced;
  return KafkaError::kNone;
}

void TxnCoordinator::InitProducerId(const std::string& id, int32_t timeout_ms,
                                    int64_t expected_producer_id, int16_t expected_epoch,
                                    InitDone done) {
  After after;
  auto fail = [&](KafkaError e) { after.push_back([done, e] { done({e, -1, -1}); }); };
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) {
      fail(KafkaError::kNotCoordinator);
    } else if (timeout_ms <= 0 || timeout_ms > config_.max_timeout_ms) {
      fail(KafkaError::kInvalidTransactionTimeout);
    } else {
      auto it = txns_.find(id);
      TxnMetadata next;
      bool proceed = true;
      if (it == txns_.end()) {
        Result<ProducerIdAndEpoch> got = producer_ids_->Allocate();
        if (!got.ok()) {
          fail(KafkaError::kCoordinatorNotAvailable);
          proceed = false;
        } else {
          next.transactional_id = id;
          next.producer_id = got->producer_id;
          next.producer_epoch = 0;
        }
      } else {
        const TxnMetadata& m = it->second;
        const bool expects = expected_producer_id >= 0 && expected_epoch >= 0;
        if (IsPrepareState(m.state)) {
          fail(KafkaError::kConcurrentTransactions);
          proceed = false;
        } else if (expects && m.last_producer_id == expected_producer_id &&
                   m.last_producer_epoch == expected_epoch && m.state != TxnState::kOngoing) {
          // A retry of an InitProducerId we already answered: same answer.
          int64_t pid = m.producer_id;
          int16_t epoch = m.producer_epoch;
          after.push_back([done, pid, epoch] { done({KafkaError::kNone, pid, epoch}); });
          proceed = false;
        } else if (expects && (m.producer_id != expected_producer_id ||
                               m.producer_epoch != expected_epoch)) {
          fail(KafkaError::kProducerFenced);
          proceed = false;
        } else if (m.state == TxnState::kOngoing) {
          // A new incarnation: fence the old one (epoch + 1) and abort its
          // transaction; the client retries on CONCURRENT_TRANSACTIONS.
          TxnMetadata fenced = m;
          if (fenced.producer_epoch < kMaxEpoch) ++fenced.producer_epoch;
          PrepareLocked(std::move(fenced), /*commit=*/false, [](KafkaError) {}, after);
          fail(KafkaError::kConcurrentTransactions);
          proceed = false;
        } else {
          next = m;
          next.last_producer_id = m.producer_id;
          next.last_producer_epoch = m.producer_epoch;
          if (m.producer_epoch >= kMaxEpoch) {
            Result<ProducerIdAndEpoch> got = producer_ids_->Allocate();
            if (!got.ok()) {
              fail(KafkaError::kCoordinatorNotAvailable);
              proceed = false;
            } else {
              next.producer_id = got->producer_id;
              next.producer_epoch = 0;
            }
          } else {
            ++next.producer_epoch;
          }
        }
      }
      if (proceed) {
        next.timeout_ms = timeout_ms;
        next.state = TxnState::kEmpty;
        next.partitions.clear();
        next.start_ms = -1;
        next.update_ms = Now();
        const int64_t pid = next.producer_id;
        const int16_t epoch = next.producer_epoch;
        PersistLocked(next,
                      [done, pid, epoch](KafkaError e) {
                        if (e == KafkaError::kNone) done({e, pid, epoch});
                        else done({e, -1, -1});
                      },
                      after);
      }
    }
  }
  RunAll(after);
}

void TxnCoordinator::AddPartitions(const std::string& id, int64_t producer_id, int16_t epoch,
                                   const std::vector<TxnPartition>& partitions, Done done) {
  After after;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = txns_.find(id);
    const TxnMetadata* m = it == txns_.end() ? nullptr : &it->second;
    const KafkaError e = CheckProducerLocked(m, producer_id, epoch);
    if (e != KafkaError::kNone) {
      after.push_back([done, e] { done(e); });
    } else if (IsPrepareState(m->state)) {
      // The previous transaction's markers are being written: go on once
      // they are (a client told CONCURRENT_TRANSACTIONS at once would only
      // come back after its retry backoff, 20 ms or more).
      std::weak_ptr<TxnCoordinator> weak = weak_from_this();
      parked_[id].push_back(
          {Now() + kParkedMaxMs, [done] { done(KafkaError::kConcurrentTransactions); },
           [weak, id, producer_id, epoch, partitions, done] {
             if (auto self = weak.lock()) self->AddPartitions(id, producer_id, epoch, partitions, done);
             else done(KafkaError::kNotCoordinator);
           }});
    } else {
      TxnMetadata next = *m;
      if (next.state != TxnState::kOngoing) {
        next.partitions.clear();
        next.start_ms = Now();
      }
      const size_t before = next.partitions.size();
      next.partitions.insert(partitions.begin(), partitions.end());
      if (next.state == TxnState::kOngoing && next.partitions.size() == before) {
        after.push_back([done] { done(KafkaError::kNone); });  // nothing new
      } else {
        next.state = TxnState::kOngoing;
        next.update_ms = Now();
        PersistLocked(next, done, after);
      }
    }
  }
  RunAll(after);
}

void TxnCoordinator::EndTxn(const std::string& id, int64_t producer_id, int16_t epoch, bool commit,
                            Done done) {
  After after;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = txns_.find(id);
    const TxnMetadata* m = it == txns_.end() ? nullptr : &it->second;
    KafkaError e = CheckProducerLocked(m, producer_id, epoch);
    bool prepared = false;  // `done` then runs once the decision is durable
    if (e == KafkaError::kNone) {
      switch (m->state) {
        case TxnState::kOngoing:
          PrepareLocked(*m, commit, done, after);
          prepared = true;
          break;
        case TxnState::kPrepareCommit:
          e = commit ? KafkaError::kConcurrentTransactions : KafkaError::kInvalidTxnState;
          break;
        case TxnState::kPrepareAbort:
          e = commit ? KafkaError::kInvalidTxnState : KafkaError::kConcurrentTransactions;
          break;
        case TxnState::kCompleteCommit:  // a retry of the EndTxn that completed
          e = commit ? KafkaError::kNone : KafkaError::kInvalidTxnState;
          break;
        case TxnState::kCompleteAbort:
          e = commit ? KafkaError::kInvalidTxnState : KafkaError::kNone;
          break;
        default:  // Empty, Dead: nothing to end
          e = KafkaError::kInvalidTxnState;
      }
    }
    if (!prepared) after.push_back([done, e] { done(e); });
  }
  RunAll(after);
}

void TxnCoordinator::PrepareLocked(TxnMetadata m, bool commit,
                                   std::function<void(KafkaError)> then, After& after) {
  m.state = commit ? TxnState::kPrepareCommit : TxnState::kPrepareAbort;
  m.update_ms = Now();
  const std::string id = m.transactional_id;
  const std::set<TxnPartition> partitions = m.partitions;
  std::weak_ptr<TxnCoordinator> weak = weak_from_this();
  PersistLocked(m,
                [weak, id, then](KafkaError e) {
                  then(e);
                  if (e != KafkaError::kNone) return;
                  if (auto self = weak.lock()) self->WriteMarkers(id);
                },
                after);
  if (txns_[id].state == m.state) markers_pending_[id] = MarkerProgress{partitions, -1, 0};
}

void TxnCoordinator::AbortTimedOutLocked(int64_t now, After& after) {
  std::vector<TxnMetadata> timed_out;
  for (const auto& [id, m] : txns_) {
    if (m.state == TxnState::kOngoing && m.start_ms >= 0 && now - m.start_ms > m.timeout_ms)
      timed_out.push_back(m);
  }
  for (TxnMetadata& m : timed_out) {
    HR_LOG(kInfo) << "transaction coordinator: aborting the transaction of '"
                  << m.transactional_id << "' (producer " << m.producer_id << "), open for "
                  << (now - m.start_ms) << " ms, longer than its timeout " << m.timeout_ms
                  << " ms";
    // Fence the producer (epoch + 1) so its late writes and EndTxn fail.
    if (m.producer_epoch < kMaxEpoch) ++m.producer_epoch;
    PrepareLocked(std::move(m), /*commit=*/false, [](KafkaError) {}, after);
  }
}

void TxnCoordinator::ExpireIdsLocked(int64_t now) {
  std::vector<std::string> expired;
  for (const auto& [id, m] : txns_) {
    if ((m.state == TxnState::kEmpty || IsCompleteState(m.state)) &&
        now - m.update_ms > config_.id_expiration_ms) {
      expired.push_back(id);
    }
  }
  for (const std::string& id : expired) {
    HR_LOG(kInfo) << "transaction coordinator: transactional id '" << id
                  << "' expired (transactional.id.expiration.ms)";
    RemoveLocked(id);
  }
}

void TxnCoordinator::Tick() {
  After after;
  std::vector<std::string> retry;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    const int64_t now = Now();
    for (const auto& [id, p] : markers_pending_) {
      if (p.retry_at_ms != 0 && p.retry_at_ms <= now) retry.push_back(id);
    }
    for (auto it = parked_.begin(); it != parked_.end();) {
      auto& waiting = it->second;
      for (auto w = waiting.begin(); w != waiting.end();) {
        if (w->deadline_ms > now) {
          ++w;
          continue;
        }
        after.push_back(std::move(w->give_up));
        w = waiting.erase(w);
      }
      it = waiting.empty() ? parked_.erase(it) : std::next(it);
    }
    if (now >= next_abort_check_ms_) {
      next_abort_check_ms_ = now + config_.abort_check_interval_ms;
      AbortTimedOutLocked(now, after);
    }
    if (now >= next_expire_check_ms_) {
      next_expire_check_ms_ = now + config_.expire_check_interval_ms;
      ExpireIdsLocked(now);
    }
    if (log_) (void)log_->FinishRewrite();
  }
  RunAll(after);
  for (const std::string& id : retry) WriteMarkers(id);
}

void TxnCoordinator::TimerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopped_) {
    timer_cv_.wait_for(lock, std::chrono::milliseconds(kTxnTimerPeriodMs));
    if (stopped_) break;
    lock.unlock();
    Tick();
    lock.lock();
  }
}

void TxnCoordinator::Stop() {
  std::unique_ptr<group::GroupLog> log;
  After parked;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    log = std::move(log_);
    for (auto& [id, waiting] : parked_) {
      for (Parked& w : waiting) parked.push_back([w] { w.give_up(); });
    }
    parked_.clear();
  }
  RunAll(parked);
  timer_cv_.notify_all();
  if (timer_.joinable()) {
    // The last reference may be dropped by a callback on the timer thread.
    if (timer_.get_id() == std::this_thread::get_id()) timer_.detach();
    else timer_.join();
  }
  if (log) {
    Status st = log->Close();
    if (!st.ok()) HR_LOG(kWarn) << "transaction coordinator: closing its log: " << st.ToString();
  }
}

std::vector<TxnListing> TxnCoordinator::List(const std::set<TxnState>& states,
                                             const std::set<int64_t>& producer_ids,
                                             int64_t min_duration_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TxnListing> out;
  const int64_t now = Now();
  for (const auto& [id, m] : txns_) {
    if (!states.empty() && !states.count(m.state)) continue;
    if (!producer_ids.empty() && !producer_ids.count(m.producer_id)) continue;
    if (min_duration_ms >= 0 && (m.start_ms < 0 || now - m.start_ms < min_duration_ms)) continue;
    out.push_back({id, m.producer_id, m.state});
  }
  return out;
}

TxnDescription TxnCoordinator::Describe(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  TxnDescription d;
  auto it = txns_.find(id);
  if (stopped_) {
    d.error = KafkaError::kNotCoordinator;
  } else if (it == txns_.end()) {
    d.error = KafkaError::kTransactionalIdNotFound;
  } else {
    d.metadata = it->second;
  }
  d.metadata.transactional_id = id;
  return d;
}

}  // namespace headrace::broker::txn
