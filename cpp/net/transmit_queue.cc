#include "net/transmit_queue.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <string>

#include "common/file_slice.h"

namespace headrace::net {

TransmitQueue::FileAccess TransmitQueue::SystemFileAccess() {
  return {.read_if_cached = ReadSliceIfCached, .cached = RangeCached};
}

void TransmitQueue::Push(OutputBuffer body) {
  Entry& e = entries_.emplace_back();
  uint32_t n = static_cast<uint32_t>(body.size());
  e.prefix[0] = static_cast<uint8_t>(n >> 24);
  e.prefix[1] = static_cast<uint8_t>(n >> 16);
  e.prefix[2] = static_cast<uint8_t>(n >> 8);
  e.prefix[3] = static_cast<uint8_t>(n);
  unsent_ += 4 + body.size();
  if (body.has_slices()) CopyIfCached(&body);
  e.body = std::move(body);
}

// Replaces *body by one byte chunk holding all of it when its file slices
// are small (kCopyFileBytes in all) and in the page cache; otherwise leaves
// it as it is (a read error is then met, and reported, by the sender).
void TransmitQueue::CopyIfCached(OutputBuffer* body) const {
  int64_t file_bytes = 0;
  for (const auto& c : body->chunks()) file_bytes += c.is_slice ? c.slice.length : 0;
  if (file_bytes > kCopyFileBytes) return;
  std::string flat(static_cast<size_t>(body->size()), '\0');
  char* at = flat.data();
  for (const auto& c : body->chunks()) {
    if (c.is_slice) {
      Result<bool> copied = access_.read_if_cached(c.slice, reinterpret_cast<uint8_t*>(at));
      if (!copied.ok() || !*copied) return;
    } else {
      std::memcpy(at, c.bytes.data(), c.bytes.size());
    }
    at += c.size();
  }
  OutputBuffer copy;
  copy.AppendChunk(std::move(flat));
  *body = std::move(copy);
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
    e.cached_to = 0;
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
          return FilePiece(e, c.slice);  // seg == e.segment: all before it is sent
        }
        iov_[p.iovcnt++] = {const_cast<char*>(c.bytes.data()) + skip,
                            static_cast<size_t>(c.size() - skip)};
      }
      if (p.iovcnt == kMaxIov) return Finish(p);
    }
  }
  return Finish(p);
}

// The piece for e's current segment, the file slice `s`: the part of it
// known to be cached (kFile), or the next window after checking it (kFile
// when cached, kLoad when not).
TransmitQueue::Piece TransmitQueue::FilePiece(Entry& e, const FileSlice& s) {
  Piece p;
  p.file_fd = s.fd;
  p.file_offset = s.position.value() + e.offset;
  if (e.offset >= e.cached_to) {
    int64_t window = std::min(s.length - e.offset, kCacheWindowBytes);
    if (!access_.cached(s.fd, p.file_offset, window)) {
      p.kind = Kind::kLoad;
      p.file_length = window;
      p.file_keepalive = s.keepalive;
      load_end_ = e.offset + window;
      return p;
    }
    e.cached_to = e.offset + window;
  }
  p.kind = Kind::kFile;
  p.file_length = e.cached_to - e.offset;
  return p;
}

TransmitQueue::Entry* TransmitQueue::Current() {
  for (Entry& e : entries_) {
    Advance(e);
    if (e.segment < e.body.chunks().size() + 1) return &e;
  }
  return nullptr;
}

void TransmitQueue::MarkLoaded() {
  Entry* e = Current();
  assert(e != nullptr && e->segment > 0 && e->body.chunks()[e->segment - 1].is_slice);
  if (e != nullptr) e->cached_to = load_end_;
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
