// The share-partition leader's calls to a share coordinator on another
// broker (cluster mode, KIP-932): ReadShareGroupState (84),
// InitializeShareGroupState (83) and WriteShareGroupState (85), v0, sent
// from one sender thread over blocking broker-to-broker connections
// (replication::LeaderConnection, secured as the inter-broker listener),
// in the order they were submitted: a share-partition's snapshots reach its
// coordinator in the order they were taken.
//
// A call accepted (it returns true) completes exactly once, never on the
// caller's thread: on the sender thread, with the coordinator's answer or
// REQUEST_TIMED_OUT when the broker could not be reached or did not answer
// in time; or on the thread calling Stop(), REQUEST_TIMED_OUT. A call made
// after Stop() returns false and never completes: the caller answers it
// (callers hold locks their completions take). The caller retries (a
// failed load is started again by the next ShareFetch; a failed write
// fails the acknowledgement).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "broker/api/handler.h"
#include "broker/coordinator/share/share_state_records.h"

namespace headrace::broker {

struct ShareStateSummary;  // api/share_state.h

namespace replication {
class LeaderConnection;
}

class ShareStateClient {
 public:
  explicit ShareStateClient(BrokerContext& ctx);
  ~ShareStateClient();  // Stop()
  ShareStateClient(const ShareStateClient&) = delete;
  ShareStateClient& operator=(const ShareStateClient&) = delete;

  // `state` is set when the error is NONE.
  using ReadDone = std::function<void(KafkaError, std::optional<share::ShareState>)>;
  using Done = std::function<void(KafkaError)>;

  bool Read(int32_t broker, const share::SharePartitionKey& key, int32_t leader_epoch,
            ReadDone done);
  bool Initialize(int32_t broker, const share::SharePartitionKey& key, int32_t state_epoch,
                  int64_t start_offset, Done done);
  bool Write(int32_t broker, const share::SharePartitionKey& key, const share::ShareState& state,
             Done done);
  // DeleteShareGroupState (86) of one share-partition.
  bool Delete(int32_t broker, const share::SharePartitionKey& key, Done done);
  // ReadShareGroupStateSummary (87): the state epoch and start offset
  // (-1: never initialized), or the error.
  using SummaryDone = std::function<void(ShareStateSummary)>;
  bool ReadSummary(int32_t broker, const share::SharePartitionKey& key, SummaryDone done);

  // Answers queued calls REQUEST_TIMED_OUT and stops the sender. Idempotent;
  // later calls are answered the same way at once.
  void Stop();

 private:
  // Runs on the sender thread with a connection to `broker` (null when it
  // could not be reached: the job answers REQUEST_TIMED_OUT).
  struct Job {
    int32_t broker = -1;
    std::function<void(replication::LeaderConnection*)> run;
  };
  bool Submit(Job job);
  void SenderLoop();
  replication::LeaderConnection* ConnectionTo(int32_t broker);

  BrokerContext& ctx_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;  // guarded by mu_
  bool stopped_ = false;   // guarded by mu_
  // Owned by the sender thread.
  std::map<int32_t, std::unique_ptr<replication::LeaderConnection>> connections_;
  std::thread sender_;
};

}  // namespace headrace::broker
