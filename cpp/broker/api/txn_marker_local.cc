#include "broker/api/txn_marker_local.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "broker/api/group_log_wait.h"
#include "broker/coordinator/group/group_coordinator.h"
#include "broker/coordinator/group/group_coordinators.h"
#include "broker/base/kafka_error.h"
#include "broker/partition/partition.h"

namespace headrace::broker {
namespace {

// The answers of one Write; `done` runs when the last one is in.
struct MarkerWrites {
  std::vector<KafkaError> errors;
  std::atomic<int> pending{0};
  txn::MarkersDone done;

  void Finish(size_t i, KafkaError e) {
    errors[i] = e;
    Release();
  }
  // One answer (or the loop's own hold) is in.
  void Release() {
    if (pending.fetch_sub(1, std::memory_order_acq_rel) == 1) done(std::move(errors));
  }
};

// Waits until `partition`'s HW passes `threshold` (the marker is committed),
// then finishes answer `i`. A state change that leaves the marker
// uncommitted (an ISR change, a truncation by a new leader) waits again if
// the partition still leads and serves.
void AwaitCommit(Purgatory& purgatory, std::shared_ptr<net::LoopExecutor> executor,
                 std::shared_ptr<MarkerWrites> writes, size_t i,
                 std::shared_ptr<Partition> partition, Offset threshold, uint64_t seen_state,
                 Purgatory::Clock::time_point deadline) {
  purgatory.Wait(
      {{partition, Watermark::kHighWatermark, threshold, seen_state}}, deadline, executor,
      [&purgatory, executor, writes, i, partition, threshold, deadline](WakeReason why) {
        if (partition->high_watermark() >= threshold) return writes->Finish(i, KafkaError::kNone);
        if (partition->offline()) return writes->Finish(i, KafkaError::kKafkaStorageError);
        if (!partition->is_leader()) return writes->Finish(i, KafkaError::kNotLeaderOrFollower);
        if (partition->log_end_offset() < threshold) {
          return writes->Finish(i, KafkaError::kNotLeaderOrFollower);  // the marker was cut off
        }
        if (why != WakeReason::kReady || Purgatory::Clock::now() >= deadline) {
          return writes->Finish(i, KafkaError::kRequestTimedOut);
        }
        AwaitCommit(purgatory, executor, writes, i, partition, threshold,
                    partition->state_version(), deadline);
      });
}

}  // namespace

void LocalTxnMarkerWriter::Write(txn::TxnMarkerSpec spec, txn::MarkersDone done) {
  auto writes = std::make_shared<MarkerWrites>();
  const size_t n = spec.partitions.size();
  writes->errors.assign(n, KafkaError::kNone);
  writes->pending.store(static_cast<int>(n) + 1);  // + this call, so done waits for the loop
  writes->done = std::move(done);
  const auto deadline = Purgatory::Clock::now() + timeout_;
  for (size_t i = 0; i < n; ++i) {
    const auto& [topic, index] = spec.partitions[i];
    if (topic == kConsumerOffsetsTopic) {
      // The coordinator of that partition's groups (single node: index 0).
      std::shared_ptr<group::GroupCoordinator> groups =
          ctx_.group_coordinators ? ctx_.group_coordinators->ForPartition(index) : nullptr;
      if (groups == nullptr) {
        writes->Finish(i, KafkaError::kNotCoordinator);
        continue;
      }
      Status completed = groups->CompleteTxn(spec.producer_id, spec.producer_epoch, spec.commit);
      if (!completed.ok()) {
        writes->Finish(i, ToKafkaError(completed));
        continue;
      }
      // Written: answered once the group log holds it durably.
      WhenGroupLogCommitted(ctx_, groups, executor_,
                            [writes, i](KafkaError e) { writes->Finish(i, e); });
      continue;
    }
    std::shared_ptr<Partition> partition = ctx_.topics().FindPartition(topic, index);
    if (partition == nullptr) {
      writes->Finish(i, KafkaError::kUnknownTopicOrPartition);
      continue;
    }
    const uint64_t state = partition->state_version();
    Result<AppendInfo> appended = partition->AppendTxnMarker(
        spec.producer_id, spec.producer_epoch, spec.coordinator_epoch, spec.commit);
    if (!appended.ok()) {
      writes->Finish(i, ToKafkaError(appended.status()));
      continue;
    }
    AwaitCommit(ctx_.state->purgatory(), executor_, writes, i, partition,
                appended->last_offset + 1, state, deadline);
  }
  writes->Release();  // the loop's hold
}

}  // namespace headrace::broker
