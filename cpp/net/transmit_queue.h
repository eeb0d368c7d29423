// TransmitQueue: the responses of one connection that are ready to go out,
// in order, and the cursor of how much of them has been sent. Each response
// goes out as its 4-byte big-endian size then its OutputBuffer chunks. The
// queue hands the backend one "piece" at a time: either up to kMaxIov byte
// ranges (several chunks and responses batched for one sendmsg/writev) or one
// file range (for sendfile/splice, so record bytes never enter user space).
// Backend independent; does no I/O.
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <cstdint>
#include <deque>

#include "common/output_buffer.h"

namespace headrace::net {

class TransmitQueue {
 public:
  static constexpr int kMaxIov = 64;

  struct Piece {
    bool is_file = false;
    int iovcnt = 0;          // !is_file: iov()[0..iovcnt) / msg()
    int file_fd = -1;        // is_file: send [file_offset, +file_length)
    int64_t file_offset = 0;
    int64_t file_length = 0;
  };

  TransmitQueue() = default;
  TransmitQueue(const TransmitQueue&) = delete;
  TransmitQueue& operator=(const TransmitQueue&) = delete;

  // Queues one response; the size prefix is body.size().
  void Push(OutputBuffer body);
  bool empty() const { return entries_.empty(); }
  // Bytes queued and not yet sent (prefixes included).
  int64_t unsent_bytes() const { return unsent_; }

  // The next piece to send. REQUIRES: !empty(). For byte pieces, iov()/msg()
  // describe it and stay valid (for an asynchronous send) until Consume() or
  // the next Next().
  Piece Next();
  const iovec* iov() const { return iov_; }
  msghdr* msg() { return &msg_; }

  // `n` bytes of the current piece were sent. REQUIRES: n <= its length.
  void Consume(int64_t n);

 private:
  struct Entry {
    uint8_t prefix[4];
    OutputBuffer body;
    // Cursor: segment 0 is the prefix, segment k >= 1 is body chunk k-1.
    size_t segment = 0;
    int64_t offset = 0;  // bytes of `segment` already sent
  };
  static int64_t SegmentSize(const Entry& e, size_t seg);
  static void Advance(Entry& e);  // skips finished/empty segments
  Piece Finish(Piece p);          // points msg_ at iov_

  std::deque<Entry> entries_;
  int64_t unsent_ = 0;
  iovec iov_[kMaxIov];
  msghdr msg_{};
};

}  // namespace headrace::net
