#include "net/transmit_queue.h"

#include <cassert>

namespace headrace::net {

void TransmitQueue::Push(OutputBuffer body) {
  Entry& e = entries_.emplace_back();
  uint32_t n = static_cast<uint32_t>(body.size());
  e.prefix[0] = static_cast<uint8_t>(n >> 24);
  e.prefix[1] = static_cast<uint8_t>(n >> 16);
  e.prefix[2] = static_cast<uint8_t>(n >> 8);
  e.prefix[3] = static_cast<uint8_t>(n);
  unsent_ += 4 + body.size();
  e.body = std::move(body);
}

int64_t TransmitQueue::SegmentSize(const Entry& e, size_t seg) {
  if (seg == 0) return 4;
  return e.body.chunks()[seg - 1].size();
}

void TransmitQueue::Advance(Entry& e) {
  size_t nseg = e.body.chunks().size() + 1;
  while (e.segment < nseg && e.offset >= SegmentSize(e, e.segment)) {
    ++e.segment;
    e.offset = 0;
  }
}

TransmitQueue::Piece TransmitQueue::Next() {
  assert(!entries_.empty());
  Piece p;
  for (Entry& e : entries_) {
    Advance(e);
    size_t nseg = e.body.chunks().size() + 1;
    for (size_t seg = e.segment; seg < nseg; ++seg) {
      int64_t skip = seg == e.segment ? e.offset : 0;
      if (seg == 0) {
        iov_[p.iovcnt++] = {e.prefix + skip, static_cast<size_t>(4 - skip)};
      } else {
        const OutputBuffer::Chunk& c = e.body.chunks()[seg - 1];
        if (c.size() == 0) continue;
        if (c.is_slice) {
          if (p.iovcnt > 0) return Finish(p);
          p.is_file = true;
          p.file_fd = c.slice.fd;
          p.file_offset = c.slice.position.value() + skip;
          p.file_length = c.slice.length - skip;
          return p;
        }
        iov_[p.iovcnt++] = {const_cast<char*>(c.bytes.data()) + skip,
                            static_cast<size_t>(c.size() - skip)};
      }
      if (p.iovcnt == kMaxIov) return Finish(p);
    }
  }
  return Finish(p);
}

TransmitQueue::Piece TransmitQueue::Finish(Piece p) {
  msg_ = {};
  msg_.msg_iov = iov_;
  msg_.msg_iovlen = static_cast<size_t>(p.iovcnt);
  return p;
}

void TransmitQueue::Consume(int64_t n) {
  unsent_ -= n;
  while (!entries_.empty()) {
    Entry& e = entries_.front();
    Advance(e);
    if (e.segment >= e.body.chunks().size() + 1) {
      entries_.pop_front();  // releases the body (and its file keepalives)
      continue;
    }
    if (n == 0) break;
    int64_t left = SegmentSize(e, e.segment) - e.offset;
    int64_t take = n < left ? n : left;
    e.offset += take;
    n -= take;
  }
}

}  // namespace headrace::net
