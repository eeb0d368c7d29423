#include "net/framer.h"

#include <cstring>

namespace headrace::net {
namespace {
constexpr size_t kPrefix = 4;
// Compact when less than this much room is left at the tail.
constexpr size_t kMinReadRoom = 4096;
}  // namespace

Framer::Framer(size_t initial_capacity)
    : initial_cap_(initial_capacity < 2 * kMinReadRoom ? 2 * kMinReadRoom : initial_capacity) {
  Reallocate(initial_cap_);
}

void Framer::Reallocate(size_t new_cap) {
  // new[] without () leaves the bytes uninitialised: no zeroing cost.
  std::unique_ptr<uint8_t[]> fresh(new uint8_t[new_cap]);
  size_t n = end_ - begin_;
  if (n > 0) std::memcpy(fresh.get(), buf_.get() + begin_, n);
  buf_ = std::move(fresh);
  cap_ = new_cap;
  begin_ = 0;
  end_ = n;
}

Framer::Result Framer::Next(int64_t max_frame) {
  Result r;
  size_t avail = end_ - begin_;
  if (avail < kPrefix) return r;
  const uint8_t* p = buf_.get() + begin_;
  int32_t size = static_cast<int32_t>((uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) |
                                      (uint32_t{p[2]} << 8) | uint32_t{p[3]});
  r.size = size;
  if (size <= 0 || size > max_frame) {
    r.status = Status::kBadSize;
    return r;
  }
  size_t total = kPrefix + static_cast<size_t>(size);
  if (avail < total) {
    pending_total_ = total;
    return r;
  }
  pending_total_ = 0;
  r.status = Status::kFrame;
  r.frame = {buf_.get() + begin_ + kPrefix, static_cast<size_t>(size)};
  begin_ += total;
  return r;
}

std::span<uint8_t> Framer::PrepareRead() {
  if (begin_ == end_) {
    begin_ = end_ = 0;
    if (cap_ > initial_cap_) Reallocate(initial_cap_);  // drop a big frame's buffer
  }
  size_t need = pending_total_ > initial_cap_ ? pending_total_ : initial_cap_;
  if (cap_ < need) {
    Reallocate(need);
  } else if (begin_ > 0 && (cap_ - end_ < kMinReadRoom || cap_ - begin_ < pending_total_)) {
    size_t n = end_ - begin_;
    std::memmove(buf_.get(), buf_.get() + begin_, n);
    begin_ = 0;
    end_ = n;
  }
  return ReadSpace();
}

}  // namespace headrace::net
