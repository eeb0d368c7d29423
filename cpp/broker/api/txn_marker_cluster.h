// The transaction coordinator's marker writer in cluster mode: partitions
// this broker leads (by its cluster view) go to the local writer; the others
// are sent as WriteTxnMarkers (API 27, v1) to their leaders, one request per
// leader, from one sender thread over blocking broker-to-broker connections
// (replication::LeaderConnection). A partition without a live leader answers
// LEADER_NOT_AVAILABLE and a failed connection REQUEST_TIMED_OUT: both are
// retried by the coordinator. On a single node everything is local.
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "broker/api/handler.h"
#include "broker/coordinator/txn/txn_marker_writer.h"

namespace headrace::broker {

namespace replication {
class LeaderConnection;
}

class ClusterTxnMarkerWriter final : public txn::TxnMarkerWriter {
 public:
  // `local` writes to local partitions and must outlive this writer.
  ClusterTxnMarkerWriter(BrokerContext& ctx, txn::TxnMarkerWriter* local);
  ~ClusterTxnMarkerWriter() override;  // Stop()
  void Write(txn::TxnMarkerSpec spec, txn::MarkersDone done) override;
  // Answers queued requests REQUEST_TIMED_OUT and stops the sender.
  // Idempotent; later writes of remote partitions fail the same way.
  void Stop();

 private:
  struct Progress;  // one Write's results, completed by its parts
  struct RemoteJob {
    int32_t broker_id;
    txn::TxnMarkerSpec spec;      // the partitions this leader gets
    std::vector<size_t> indexes;  // their positions in the original spec
    std::shared_ptr<Progress> progress;
  };
  void SenderLoop();
  void Send(RemoteJob& job);

  BrokerContext& ctx_;
  txn::TxnMarkerWriter* local_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<RemoteJob> queue_;  // guarded by mu_
  bool stopped_ = false;         // guarded by mu_
  // Owned by the sender thread.
  std::map<int32_t, std::unique_ptr<replication::LeaderConnection>> connections_;
  std::thread sender_;
};

}  // namespace headrace::broker
