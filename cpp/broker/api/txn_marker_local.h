// The broker's own TxnMarkerWriter (coordinator/txn/txn_marker_writer.h): writes the
// markers of a transaction into the partitions this broker holds. Used by
// the transaction coordinator and by WriteTxnMarkers (API 27).
//
// For each partition of the spec, in order:
//   __consumer_offsets-N   the group coordinator's CompleteTxn(producer id,
//                          commit) (its pending transactional offsets),
//                          answered once the group log holds that durably
//                          (WhenGroupLogCommitted); no coordinator here ->
//                          NOT_COORDINATOR
//   any other partition    Partition::AppendTxnMarker, then a wait in the
//                          purgatory until the HW passes the marker
//                          (committed, so acks=all durable):
//                          unknown -> UNKNOWN_TOPIC_OR_PARTITION, not the
//                          leader -> NOT_LEADER_OR_FOLLOWER, epochs ->
//                          INVALID_PRODUCER_EPOCH / TRANSACTION_COORDINATOR_
//                          FENCED, no commit within the timeout ->
//                          REQUEST_TIMED_OUT, offline -> KAFKA_STORAGE_ERROR,
//                          leadership lost while waiting ->
//                          NOT_LEADER_OR_FOLLOWER, shutdown ->
//                          REQUEST_TIMED_OUT.
// `done` runs exactly once with one error per partition, in order: on the
// calling thread when nothing waits, else on `executor` — never inline on
// the thread that committed the last marker, which may hold a lock `done`
// takes (the group coordinator appends to its log under its mutex). A null
// executor (tests only) runs it on that thread.
//
// Lifetime: the BrokerContext must outlive every write in flight; the
// writer itself may be destroyed as soon as Write returns.
#pragma once

#include <chrono>
#include <memory>

#include "broker/api/handler.h"
#include "broker/coordinator/txn/txn_marker_writer.h"

namespace headrace::broker {

// How long a marker may take to be committed (Kafka's request.timeout.ms
// default for the coordinator's marker requests).
inline constexpr std::chrono::milliseconds kTxnMarkerCommitTimeout{30000};

class LocalTxnMarkerWriter : public txn::TxnMarkerWriter {
 public:
  LocalTxnMarkerWriter(BrokerContext& ctx, std::shared_ptr<net::LoopExecutor> executor,
                       std::chrono::milliseconds timeout = kTxnMarkerCommitTimeout)
      : ctx_(ctx), executor_(std::move(executor)), timeout_(timeout) {}
  void Write(txn::TxnMarkerSpec spec, txn::MarkersDone done) override;

 private:
  BrokerContext& ctx_;
  std::shared_ptr<net::LoopExecutor> executor_;
  std::chrono::milliseconds timeout_;
};

}  // namespace headrace::broker
