// RebuildProducerState: replays the batch headers of a log's tail into a
// ProducerStateTable (see producer_state.h).
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <vector>

#include "broker/partition/producer_state.h"

namespace headrace::broker {
namespace {

constexpr int64_t kReadChunkBytes = 8 << 20;

// Reads and parses the header of the batch at `pos` of `fd`. The length
// field is patched to the header's own size so that ParseBatchHeader (which
// wants the whole batch) accepts the 61 bytes; the real length is restored.
Result<BatchHeader> ReadHeaderAt(int fd, int64_t pos) {
  std::array<uint8_t, kBatchHeaderSize> buf;
  size_t got = 0;
  while (got < buf.size()) {
    ssize_t r = pread(fd, buf.data() + got, buf.size() - got, pos + static_cast<int64_t>(got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Status::FromErrno("pread batch header", errno);
    if (r == 0) return Status::Corruption("log ends inside a batch header");
    got += static_cast<size_t>(r);
  }
  uint8_t* len = buf.data() + 8;  // batch length: int32 after the base offset
  const int32_t real = static_cast<int32_t>((uint32_t{len[0]} << 24) | (uint32_t{len[1]} << 16) |
                                            (uint32_t{len[2]} << 8) | uint32_t{len[3]});
  constexpr int32_t kHeaderLength = kBatchHeaderSize - kBatchLogOverhead;
  len[0] = len[1] = len[2] = 0;
  len[3] = static_cast<uint8_t>(kHeaderLength);
  HR_ASSIGN_OR_RETURN(BatchHeader h, ParseBatchHeader(buf));
  if (real < kHeaderLength) return Status::Corruption("batch length below the header size");
  h.batch_length = real;
  return h;
}

// The end-transaction marker of the control batch `h` at `pos` of `fd`.
Result<EndTxnMarker> ReadMarkerAt(int fd, int64_t pos, const BatchHeader& h) {
  constexpr int64_t kMaxMarkerBatch = 4096;  // one short record
  if (h.total_size() > kMaxMarkerBatch) return Status::Corruption("oversized control batch");
  std::vector<uint8_t> buf(static_cast<size_t>(h.total_size()));
  size_t got = 0;
  while (got < buf.size()) {
    ssize_t r = pread(fd, buf.data() + got, buf.size() - got, pos + static_cast<int64_t>(got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Status::FromErrno("pread control batch", errno);
    if (r == 0) return Status::Corruption("log ends inside a control batch");
    got += static_cast<size_t>(r);
  }
  return ParseEndTxnMarker(buf);
}

// Replays the batches of one slice; sets *next past the last one.
Status ReplaySlice(const FileSlice& slice, ProducerStateTable* table, Offset* next,
                   const MarkerReplayed& on_marker) {
  int64_t pos = 0;
  while (pos + kBatchHeaderSize <= slice.length) {
    const int64_t at = slice.position.value() + pos;
    HR_ASSIGN_OR_RETURN(BatchHeader h, ReadHeaderAt(slice.fd, at));
    if (IsTxnMarkerBatch(h)) {
      Result<EndTxnMarker> marker = ReadMarkerAt(slice.fd, at, h);
      if (marker.ok()) {
        CompletedTxn done = table->UpdateMarker(h, *marker);
        if (on_marker) on_marker(done);
      } else if (marker.status().code() != StatusCode::kUnsupported) {
        return marker.status();
      }
    } else {
      table->Update(h);
    }
    *next = std::max(*next, h.last_offset() + 1);
    pos += h.total_size();
  }
  return Status::OK();
}

}  // namespace

Status RebuildProducerState(const Log& log, ProducerStateTable* table, int64_t window,
                            const MarkerReplayed& on_marker) {
  table->Clear();
  const Offset end = log.end_offset();
  const Offset from =
      window >= end.value() ? log.start_offset() : std::max(log.start_offset(), end - window);
  return ReplayProducerState(log, from, table, on_marker);
}

Status ReplayProducerState(const Log& log, Offset from, ProducerStateTable* table,
                           const MarkerReplayed& on_marker) {
  const Offset end = log.end_offset();
  from = std::max(from, log.start_offset());
  while (from < end) {
    HR_ASSIGN_OR_RETURN(ReadResult r, log.Read(from, kReadChunkBytes, end, true));
    Offset next = from;
    for (const FileSlice& slice : r.slices) {
      if (slice.fd < 0) return Status::OK();
      HR_RETURN_IF_ERROR(ReplaySlice(slice, table, &next, on_marker));
    }
    if (next <= from) break;  // no progress: nothing more to read
    from = next;
  }
  return Status::OK();
}

}  // namespace headrace::broker
