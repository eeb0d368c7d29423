// TransmitQueue: the responses of one connection that are ready to go out,
// in order, and the cursor of how much of them has been sent. Each response
// goes out as its 4-byte big-endian size then its OutputBuffer chunks.
//
// It is where copy vs sendfile is decided (handlers only put FileSlices into
// responses):
//   - a response whose file slices hold at most kCopyFileBytes in all is
//     copied into memory when it is queued, if its pages are in the page
//     cache (preadv2 RWF_NOWAIT), so it leaves in one sendmsg with the
//     responses around it;
//   - every other file range is sent from the file (sendfile), window by
//     window (kCacheWindowBytes), each window first checked to be in the
//     page cache. A window that is not comes out as a kLoad piece: the
//     owner reads it into the page cache off the I/O thread, calls
//     MarkLoaded() and asks again. The queue does not move past it
//     meanwhile, so responses keep their order.
//
// The queue hands the backend one piece at a time: up to kMaxIov byte ranges
// (several chunks and responses batched for one sendmsg), one file range
// (sendfile) or one range to load. No socket I/O; it reads small cached
// file ranges (never waiting for the disk) and asks whether others are
// cached. Not thread-safe: owned by one connection's loop.
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <cstdint>
#include <deque>
#include <memory>

#include "common/output_buffer.h"
#include "headrace/status.h"

namespace headrace::net {

class TransmitQueue {
 public:
  static constexpr int kMaxIov = 64;
  // Responses with at most this many file bytes in all are copied (a
  // caught-up consumer's fetch; one sendmsg instead of sendmsg + sendfile +
  // sendmsg per partition: docs/performance.md).
  static constexpr int64_t kCopyFileBytes = 16 << 10;
  // File ranges are checked for page-cache residency (and loaded) in
  // windows of at most this size.
  static constexpr int64_t kCacheWindowBytes = 16 << 20;

  // How the queue looks at files; tests replace it.
  struct FileAccess {
    // Copies s into dst without waiting for the disk: true when done, false
    // when part of it is not in the page cache.
    Result<bool> (*read_if_cached)(const FileSlice& s, uint8_t* dst);
    // Whether [pos, pos + len) of fd is in the page cache.
    bool (*cached)(int fd, int64_t pos, int64_t len);
  };
  static FileAccess SystemFileAccess();

  enum class Kind {
    kBytes,  // iov()[0..iovcnt) / msg(): one sendmsg
    kFile,   // send [file_offset, +file_length) of file_fd from the file
    kLoad,   // bring [file_offset, +file_length) of file_fd into the page
             // cache (file_keepalive keeps the file open), then MarkLoaded()
  };
  struct Piece {
    Kind kind = Kind::kBytes;
    int iovcnt = 0;
    int file_fd = -1;
    int64_t file_offset = 0;
    int64_t file_length = 0;
    std::shared_ptr<const void> file_keepalive;  // kLoad only
  };

  explicit TransmitQueue(FileAccess access = SystemFileAccess()) : access_(access) {}
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
  // The range of the last kLoad piece is now in the page cache: the next
  // Next() sends it from the file without checking it again.
  // REQUIRES: the last Next() returned kLoad.
  void MarkLoaded();

 private:
  struct Entry {
    uint8_t prefix[4];
    OutputBuffer body;
    // Cursor: segment 0 is the prefix, segment k >= 1 is body chunk k-1.
    size_t segment = 0;
    int64_t offset = 0;     // bytes of `segment` already sent
    int64_t cached_to = 0;  // bytes of `segment` known to be in the page cache
  };
  static int64_t SegmentSize(const Entry& e, size_t seg);
  static void Advance(Entry& e);  // skips finished/empty segments
  Piece FilePiece(Entry& e, const FileSlice& slice);
  void CopyIfCached(OutputBuffer* body) const;
  Entry* Current();  // the first entry not fully sent, or null
  Piece Finish(Piece p);  // points msg_ at iov_

  FileAccess access_;
  std::deque<Entry> entries_;
  int64_t unsent_ = 0;
  int64_t load_end_ = 0;  // end (segment bytes) of the last kLoad piece
  iovec iov_[kMaxIov];
  msghdr msg_{};
};

}  // namespace headrace::net
