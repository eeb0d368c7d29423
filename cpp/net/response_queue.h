// ResponseQueue: the requests of one connection that were handed to the
// handler and whose Reply is not yet released, in arrival order. Each request
// gets a sequence number; replies may be filled in any order, and are popped
// strictly in sequence order, so responses go out in request order.
// Single-threaded (the connection's I/O thread); does no I/O.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>

#include "net/request_handler.h"

namespace headrace::net {

class ResponseQueue {
 public:
  // Reserves the next sequence number.
  uint64_t Push() {
    slots_.emplace_back();
    return next_seq_++;
  }
  // Stores the reply for `seq`. Returns false (and drops it) for a sequence
  // number that is unknown or already answered.
  bool Fill(uint64_t seq, Reply reply) {
    if (seq < head_seq_ || seq >= next_seq_) return false;
    Slot& s = slots_[static_cast<size_t>(seq - head_seq_)];
    if (s.done) return false;
    s.done = true;
    s.reply = std::move(reply);
    return true;
  }
  // The oldest reply if it has been filled.
  std::optional<Reply> PopReady() {
    if (slots_.empty() || !slots_.front().done) return std::nullopt;
    std::optional<Reply> r(std::move(slots_.front().reply));
    slots_.pop_front();
    ++head_seq_;
    return r;
  }
  // Requests handed to the handler and not yet popped.
  size_t in_flight() const { return slots_.size(); }

 private:
  struct Slot {
    bool done = false;
    Reply reply;
  };
  // Invariant: slots_[i] belongs to sequence number head_seq_ + i.
  std::deque<Slot> slots_;
  uint64_t head_seq_ = 0;
  uint64_t next_seq_ = 0;
};

}  // namespace headrace::net
