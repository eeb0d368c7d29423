// Parking a request's partitions on the high watermark (issue 37): a request
// whose answer Kafka bounds by the HW (DeleteRecords, ListOffsets) waits in
// the purgatory until the HW reaches an offset the client can already have
// been acknowledged (an acks=1 record whose fsync or follower fetch is still
// pending), instead of failing or answering short.
//
// Contract: a ParkedReply answers its request exactly once, when the handler
// has called Release() (its own hold) and every ParkOnHighWatermark callback
// has run. Callbacks run on the connection's I/O thread (Purgatory::Wait),
// one at a time, so they may fill the response without a lock; a callback
// may park the same partition again (it is then answered by the new wait).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <utility>

#include "broker/api/handler.h"
#include "broker/partition/purgatory.h"

namespace headrace::broker {

template <typename Response>
struct ParkedReply {
  explicit ParkedReply(Request r) : req(std::move(r)) {}
  Request req;
  Response resp;
  std::atomic<int> holds{1};  // the handler's own, until Release

  void Release() {
    if (holds.fetch_sub(1, std::memory_order_acq_rel) == 1) req.Reply(resp);
  }
};

// Runs `then(why)` once `partition`'s HW reaches `threshold`, it changes
// state after `seen_state` (Partition::state_version), `deadline` passes or
// the broker shuts down; `reply` is not answered before.
template <typename Response>
void ParkOnHighWatermark(Purgatory& purgatory, const std::shared_ptr<ParkedReply<Response>>& reply,
                         std::shared_ptr<Partition> partition, Offset threshold,
                         uint64_t seen_state, Purgatory::Clock::time_point deadline,
                         std::function<void(WakeReason)> then) {
  reply->holds.fetch_add(1, std::memory_order_acq_rel);
  purgatory.Wait({{std::move(partition), Watermark::kHighWatermark, threshold, seen_state}},
                 deadline, reply->req.executor(), [reply, then = std::move(then)](WakeReason why) {
                   then(why);
                   reply->Release();
                 });
}

}  // namespace headrace::broker
