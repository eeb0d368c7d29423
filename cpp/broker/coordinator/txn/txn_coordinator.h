// The transaction coordinator (KIP-98): owns every transactional id's state
// (txn_metadata.h), persists each change to its log before answering, and
// ends transactions by writing markers through a TxnMarkerWriter.
// docs/transactions.md has the state machine and the answers.
//
// Log: single node, <data_dir>/__transaction_state (a name the topic
// registry never takes for a partition); cluster mode, the local leader
// replica of one partition of __transaction_state (replicated like any
// partition): a coordinator per partition led here, routed by
// txn_coordinators.h, each owning the transactional ids of its partition. The log
// is a Partition whose high watermark only covers fsynced records: a change
// is answered once the HW passes it (the purgatory waits; no fsync on the
// caller's thread). On open the log is replayed; transactions found in
// PrepareCommit/PrepareAbort get their markers written again (a coordinator
// killed between the decision and COMPLETE finishes after restart).
//
// Threading: every public method may be called from any thread; `done`
// callbacks run exactly once, with no coordinator lock held, on the calling
// thread, the flusher's or the timer's. One mutex guards all state.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "broker/coordinator/base/group_log.h"
#include "broker/base/kafka_error.h"
#include "broker/partition/partition.h"
#include "broker/partition/producer_id_allocator.h"
#include "broker/partition/purgatory.h"
#include "broker/base/serial_executor.h"
#include "broker/coordinator/txn/txn_config.h"
#include "broker/coordinator/txn/txn_marker_writer.h"
#include "broker/coordinator/txn/txn_metadata.h"

namespace headrace::broker::txn {

inline constexpr const char* kTxnLogDirName = "__transaction_state";
// How often Tick() should run: the period of a coordinator's own timer and
// of the router's shared one (marker retries are checked this often).
inline constexpr int64_t kTxnTimerPeriodMs = 50;

struct InitProducerIdResult {
  KafkaError error = KafkaError::kNone;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
};

struct TxnListing {
  std::string transactional_id;
  int64_t producer_id = -1;
  TxnState state = TxnState::kEmpty;
};

struct TxnDescription {
  KafkaError error = KafkaError::kNone;  // TRANSACTIONAL_ID_NOT_FOUND
  TxnMetadata metadata;
};

class TxnCoordinator : public std::enable_shared_from_this<TxnCoordinator> {
 public:
  struct Options {
    TxnConfig config;
    std::string data_dir;       // single node: the log is data_dir/__transaction_state
    FileEnv* env = nullptr;     // the log's I/O seam (null = the OS)
    PartitionServices log_services;  // purgatory + flusher of the log partition
    // Cluster mode: the local leader replica of its __transaction_state
    // partition.
    std::shared_ptr<Partition> log_partition;
    Purgatory* purgatory = nullptr;       // required: waits for the log's HW
    TxnMarkerWriter* markers = nullptr;   // required; outlives the coordinator
    ProducerIdAllocator* producer_ids = nullptr;  // required; shared by a broker's coordinators
    // Runs the waiters of the log's durability (may be shared by a broker's
    // coordinators: one thread for all); null: a thread of its own.
    std::shared_ptr<SerialExecutor> executor;
    std::function<int64_t()> now_ms;      // default: the system clock
    bool start_timer = true;  // false: the router's timer (or a test) calls Tick()
  };

  static Result<std::shared_ptr<TxnCoordinator>> Open(Options options);
  ~TxnCoordinator();

  using InitDone = std::function<void(InitProducerIdResult)>;
  using Done = std::function<void(KafkaError)>;

  // InitProducerId with a transactional id. `expected_*` >= 0: the id and
  // epoch the client holds (KIP-360). Errors: INVALID_TRANSACTION_TIMEOUT,
  // CONCURRENT_TRANSACTIONS (markers in flight, or an open transaction of
  // the previous incarnation being aborted: retry), PRODUCER_FENCED,
  // NOT_COORDINATOR (stopped or the log is not writable here).
  void InitProducerId(const std::string& id, int32_t timeout_ms, int64_t expected_producer_id,
                      int16_t expected_epoch, InitDone done);
  // AddPartitionsToTxn / AddOffsetsToTxn (the caller maps a group to its
  // __consumer_offsets partition). While the producer's previous
  // transaction is writing its markers the request waits for them (up to
  // 1 s, then CONCURRENT_TRANSACTIONS). Errors: INVALID_PRODUCER_ID_MAPPING,
  // PRODUCER_FENCED, CONCURRENT_TRANSACTIONS, NOT_COORDINATOR.
  void AddPartitions(const std::string& id, int64_t producer_id, int16_t epoch,
                     const std::vector<TxnPartition>& partitions, Done done);
  // EndTxn. Answered once the decision is durable; markers follow.
  // Errors: as AddPartitions, and INVALID_TXN_STATE.
  void EndTxn(const std::string& id, int64_t producer_id, int16_t epoch, bool commit, Done done);

  // ListTransactions: `states` / `producer_ids` empty = any;
  // `min_duration_ms` >= 0: only Ongoing-or-later transactions open at least
  // that long (v1).
  std::vector<TxnListing> List(const std::set<TxnState>& states,
                               const std::set<int64_t>& producer_ids, int64_t min_duration_ms);
  TxnDescription Describe(const std::string& id);

  // Retries markers that are due, aborts timed-out transactions and expires
  // idle ids (the timer thread calls this, every kTxnTimerPeriodMs).
  void Tick();
  // Stops the timer; later requests answer NOT_COORDINATOR. Idempotent.
  void Stop();

  const std::shared_ptr<Partition>& log_partition() const { return log_partition_; }
  int32_t coordinator_epoch() const { return coordinator_epoch_; }
  const TxnConfig& config() const { return config_; }

 private:
  using After = std::vector<std::function<void()>>;
  struct MarkerProgress {
    std::set<TxnPartition> remaining;
    int64_t retry_at_ms = -1;  // -1: to write now; 0: being written; else retry then
    int attempts = 0;
  };

  explicit TxnCoordinator(Options options);
  Status Load();
  int64_t Now() const { return now_ms_(); }
  void TimerLoop();
  static void RunAll(After& after);

  // REQUIRES: mu_. Appends `next` as the id's new state; on success stores
  // it and queues `then` to run once the record is durable (or with
  // NOT_COORDINATOR / REQUEST_TIMED_OUT when it cannot become durable).
  void PersistLocked(const TxnMetadata& next, std::function<void(KafkaError)> then,
                     After& after);
  // REQUIRES: mu_. Tombstones an expired id.
  void RemoveLocked(const std::string& id);
  void MaybeCompactLocked();
  // REQUIRES: mu_. The checks of AddPartitions/EndTxn on (id, pid, epoch).
  KafkaError CheckProducerLocked(const TxnMetadata* m, int64_t producer_id, int16_t epoch) const;
  // REQUIRES: mu_. Moves an Ongoing (or Empty/Complete*) transaction to
  // PrepareCommit/PrepareAbort with `epoch`, persisting; markers start once
  // it is durable; `then` runs at that point.
  void PrepareLocked(TxnMetadata m, bool commit, std::function<void(KafkaError)> then,
                     After& after);
  // Markers of a Prepare* transaction (no lock held); txn_coordinator_markers.cc.
  void WriteMarkers(const std::string& id);
  void OnMarkersWritten(const std::string& id, int64_t producer_id, int16_t epoch,
                        std::vector<TxnPartition> partitions, std::vector<KafkaError> errors);
  void AbortTimedOutLocked(int64_t now, After& after);
  void ExpireIdsLocked(int64_t now);

  TxnConfig config_;
  std::string data_dir_;
  Purgatory* purgatory_;
  TxnMarkerWriter* markers_;
  ProducerIdAllocator* producer_ids_;
  std::function<int64_t()> now_ms_;
  // Runs the waiters of PersistLocked (the log's HW reaching a state).
  std::shared_ptr<SerialExecutor> executor_;
  std::shared_ptr<Partition> log_partition_;
  bool attached_ = false;  // cluster mode: log_partition_ is a replicated partition
  int32_t coordinator_epoch_ = 0;

  mutable std::mutex mu_;
  std::unique_ptr<group::GroupLog> log_;        // guarded by mu_; null once stopped
  std::map<std::string, TxnMetadata> txns_;     // guarded by mu_
  std::map<std::string, MarkerProgress> markers_pending_;  // guarded by mu_
  // Requests waiting for an id's transaction to complete (its markers), by
  // id; `retry` runs them again then, `give_up` answers after the deadline.
  struct Parked {
    int64_t deadline_ms;
    std::function<void()> give_up;
    std::function<void()> retry;
  };
  std::map<std::string, std::vector<Parked>> parked_;  // guarded by mu_
  int64_t appended_since_compaction_ = 0;       // guarded by mu_
  int64_t next_abort_check_ms_ = 0;             // guarded by mu_
  int64_t next_expire_check_ms_ = 0;            // guarded by mu_
  bool stopped_ = false;                        // guarded by mu_

  std::condition_variable timer_cv_;
  std::thread timer_;
};

}  // namespace headrace::broker::txn
