// The transaction coordinator's marker side: writing a prepared
// transaction's markers through the TxnMarkerWriter, retrying partitions
// that failed, and completing the transaction (CompleteCommit /
// CompleteAbort) once every partition has its marker, which releases the
// requests parked for it. The state machine is in txn_coordinator.cc.
#include <algorithm>

#include "broker/coordinator/txn/txn_coordinator.h"
#include "common/logging.h"

namespace headrace::broker::txn {
namespace {

// Markers that failed with a retriable error are written again after this
// (doubling up to kMarkerRetryMaxMs).
constexpr int64_t kMarkerRetryMs = 100;
constexpr int64_t kMarkerRetryMaxMs = 2000;

// A marker error after which the partition counts as done: it no longer
// exists, or the marker reached it.
bool MarkerDone(KafkaError e) {
  return e == KafkaError::kNone || e == KafkaError::kUnknownTopicOrPartition;
}

}  // namespace

void TxnCoordinator::WriteMarkers(const std::string& id) {
  TxnMarkerSpec spec;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    auto it = txns_.find(id);
    auto p = markers_pending_.find(id);
    if (it == txns_.end() || p == markers_pending_.end() || !IsPrepareState(it->second.state)) return;
    if (p->second.retry_at_ms == 0) return;  // being written now
    p->second.retry_at_ms = 0;
    spec.producer_id = it->second.producer_id;
    spec.producer_epoch = it->second.producer_epoch;
    spec.coordinator_epoch = coordinator_epoch_;
    spec.commit = it->second.state == TxnState::kPrepareCommit;
    spec.partitions.assign(p->second.remaining.begin(), p->second.remaining.end());
  }
  std::weak_ptr<TxnCoordinator> weak = weak_from_this();
  std::vector<TxnPartition> partitions = spec.partitions;
  const int64_t pid = spec.producer_id;
  const int16_t epoch = spec.producer_epoch;
  markers_->Write(std::move(spec), [weak, id, pid, epoch, partitions](std::vector<KafkaError> errors) {
    if (auto self = weak.lock()) self->OnMarkersWritten(id, pid, epoch, partitions, std::move(errors));
  });
}

void TxnCoordinator::OnMarkersWritten(const std::string& id, int64_t producer_id, int16_t epoch,
                                      std::vector<TxnPartition> partitions,
                                      std::vector<KafkaError> errors) {
  After after;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = txns_.find(id);
    auto p = markers_pending_.find(id);
    if (stopped_ || it == txns_.end() || p == markers_pending_.end() ||
        it->second.producer_id != producer_id || it->second.producer_epoch != epoch ||
        !IsPrepareState(it->second.state)) {
      return;
    }
    MarkerProgress& progress = p->second;
    KafkaError first_error = KafkaError::kNone;
    for (size_t i = 0; i < partitions.size(); ++i) {
      KafkaError e = i < errors.size() ? errors[i] : KafkaError::kUnknownServerError;
      if (MarkerDone(e)) progress.remaining.erase(partitions[i]);
      else if (first_error == KafkaError::kNone) first_error = e;
    }
    if (!progress.remaining.empty()) {
      ++progress.attempts;
      const int64_t backoff =
          std::min<int64_t>(kMarkerRetryMaxMs, kMarkerRetryMs << std::min(progress.attempts, 5));
      progress.retry_at_ms = Now() + backoff;
      if (progress.attempts == 1 || progress.attempts % 20 == 0) {
        HR_LOG(kWarn) << "transaction coordinator: markers of '" << id << "' not written to "
                         << progress.remaining.size() << " partition(s) ("
                         << KafkaErrorName(first_error) << "), retrying";
      }
      return;
    }
    markers_pending_.erase(p);
    TxnMetadata next = it->second;
    next.state = next.state == TxnState::kPrepareCommit ? TxnState::kCompleteCommit
                                                        : TxnState::kCompleteAbort;
    next.partitions.clear();
    next.start_ms = -1;
    next.update_ms = Now();
    PersistLocked(next, [](KafkaError) {}, after);
    // Requests that waited for this transaction to complete go on.
    if (auto parked = parked_.find(id); parked != parked_.end()) {
      for (Parked& w : parked->second) after.push_back(std::move(w.retry));
      parked_.erase(parked);
    }
  }
  RunAll(after);
}

}  // namespace headrace::broker::txn
