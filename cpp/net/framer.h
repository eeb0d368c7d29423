// Framer: the read buffer of one connection and the splitter of its bytes
// into requests (4-byte big-endian size prefix, then `size` bytes). Frames are
// handed out in place (no copy); many frames in one read and frames split over
// many reads are both handled. Backend independent; does no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace headrace::net {

class Framer {
 public:
  // `initial_capacity`: the usual buffer size (e.g. 64 KiB). The buffer grows
  // to hold one larger frame and shrinks back once it is consumed.
  explicit Framer(size_t initial_capacity);

  enum class Status { kFrame, kNeedMore, kBadSize };
  struct Result {
    Status status = Status::kNeedMore;
    std::span<uint8_t> frame;  // kFrame: the request without its prefix
    int64_t size = 0;          // kFrame / kBadSize: the declared size
  };

  // Takes the next complete frame from the buffer. A declared size <= 0 or
  // > max_frame is kBadSize (the caller closes the connection). The span stays
  // valid until the next PrepareRead() (the caller may modify it in place).
  Result Next(int64_t max_frame);

  // Makes room for the next read and returns where it may write: compacts the
  // unread bytes to the front when useful, grows for a partially received
  // large frame, shrinks an idle large buffer. REQUIRES: no read outstanding
  // into the previous ReadSpace() and no frame span still in use.
  std::span<uint8_t> PrepareRead();
  // The current write area (same as the last PrepareRead(); for backends).
  std::span<uint8_t> ReadSpace() { return {buf_.get() + end_, cap_ - end_}; }
  // `n` bytes were read into the start of ReadSpace().
  void Commit(size_t n) { end_ += n; }

  size_t buffered() const { return end_ - begin_; }
  size_t capacity() const { return cap_; }

 private:
  void Reallocate(size_t new_cap);

  size_t initial_cap_;
  std::unique_ptr<uint8_t[]> buf_;
  size_t cap_ = 0;
  // Invariant: begin_ <= end_ <= cap_; [begin_, end_) holds unconsumed bytes.
  size_t begin_ = 0;
  size_t end_ = 0;
  // Size (prefix included) of the frame at begin_ once its prefix is known
  // and it is not complete yet; 0 otherwise.
  size_t pending_total_ = 0;
};

}  // namespace headrace::net
