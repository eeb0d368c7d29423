// Log readers: Read, OffsetForTime, MaxTimestamp. They run concurrently with
// the appender: each loads end_offset_ and then a segment's size once, and
// never looks past them, so it only ever sees whole batches.
#include <algorithm>

#include "log/log_impl.h"
#include "log/record_batch_internal.h"

namespace headrace {
namespace {

constexpr int64_t kReadReadahead = 4096;

// Reads a whole batch at `pos` of `seg` into `buf`.
Status ReadBatch(const Segment& seg, int64_t pos, int64_t size, std::vector<uint8_t>* buf) {
  FileReader reader = seg.Reader(seg.size(), size);
  HR_ASSIGN_OR_RETURN(const uint8_t* p, reader.Peek(pos, size));
  buf->assign(p, p + size);
  return Status::OK();
}

}  // namespace

std::vector<std::shared_ptr<Segment>> LogImpl::SegmentsFrom(Offset offset) const {
  std::shared_lock<std::shared_mutex> r(segments_mu_);
  auto it = std::upper_bound(segments_.begin(), segments_.end(), offset,
                             [](Offset o, const auto& s) { return o < s->base_offset(); });
  if (it != segments_.begin()) --it;
  return {it, segments_.end()};
}

std::shared_ptr<Segment> LogImpl::SegmentAfter(Offset offset, bool holding) const {
  std::shared_lock<std::shared_mutex> r(segments_mu_);
  auto it = std::upper_bound(segments_.begin(), segments_.end(), offset,
                             [](Offset o, const auto& s) { return o < s->base_offset(); });
  if (holding) {
    if (it == segments_.begin()) return nullptr;
    --it;
  }
  return it == segments_.end() ? nullptr : *it;
}

Result<ReadResult> LogImpl::Read(Offset offset, int64_t max_bytes, Offset upper_bound,
                                 bool min_one_batch) const {
  if (closed_.load()) return Status::Closed(dir_);
  const Offset end = end_offset(), start = start_offset();
  if (offset < start || offset > end)
    return Status::OutOfRange("offset " + std::to_string(offset.value()) + " outside [" +
                              std::to_string(start.value()) + ", " + std::to_string(end.value()) + "]");
  ReadResult result;
  result.first_batch_base = Offset(-1);
  const Offset bound = std::min(upper_bound, end);
  if (offset >= bound) return result;
  std::shared_ptr<Segment> seg = SegmentAfter(offset, /*holding=*/true);
  if (seg == nullptr)  // retention removed it since start_offset() was read
    return Status::OutOfRange("offset " + std::to_string(offset.value()) + " was deleted");
  // Per segment: the slice starts at the batch holding `offset` and ends at
  // the first batch reaching `bound` or at the last whole batch within the
  // byte budget, whichever is first. Both ends come from the offset index
  // plus a short header scan (at most one index interval), not from walking
  // every batch in between.
  for (; seg != nullptr; seg = SegmentAfter(seg->base_offset(), /*holding=*/false)) {
    const int64_t limit = seg->size();
    FileReader reader = seg->Reader(limit, kReadReadahead);
    HR_ASSIGN_OR_RETURN(int64_t pos, seg->FindPosition(offset, limit, &reader));
    HR_ASSIGN_OR_RETURN(int64_t bound_pos, seg->FindPosition(bound, limit, &reader));
    const bool first = result.bytes == 0;
    const int64_t budget = std::max<int64_t>(0, max_bytes - result.bytes);
    int64_t end = bound_pos;
    bool done = bound_pos < limit;  // the bound lies in this segment
    if (bound_pos - pos > budget) {
      HR_ASSIGN_OR_RETURN(end, seg->LastBoundaryWithin(pos, pos + budget, limit, &reader));
      done = true;
    }
    if (end > pos || (first && min_one_batch && pos < bound_pos)) {
      HR_ASSIGN_OR_RETURN(const uint8_t* p, reader.Peek(pos, kBatchHeaderSize));
      BatchHeader h = batch::DecodeHeader(p);
      if (h.batch_length < batch::kMinBatchLength)
        return Status::Corruption(seg->log_path() + ": bad batch length at " + std::to_string(pos));
      if (end == pos) end = pos + h.total_size();  // the one batch over budget
      if (first) result.first_batch_base = h.base_offset;
      result.bytes += end - pos;
      result.slices.push_back(FileSlice{seg->fd(), FilePosition(pos), end - pos, seg});
    }
    if (done) break;
  }
  return result;
}

Result<std::pair<Offset, TimestampMs>> LogImpl::FindTimeInSegment(const Segment& seg,
                                                                  TimestampMs ts,
                                                                  Offset start) const {
  const int64_t limit = seg.size();
  std::optional<TimeIndex::Entry> te = seg.time_index().LookupBefore(ts);
  int64_t pos = 0;
  if (te) pos = seg.offset_index().Lookup(te->offset, FilePosition(limit)).position.value();
  FileReader reader = seg.Reader(limit, kReadReadahead);
  std::vector<uint8_t> buf;
  while (pos < limit) {
    HR_ASSIGN_OR_RETURN(const uint8_t* p, reader.Peek(pos, kBatchHeaderSize));
    BatchHeader h = batch::DecodeHeader(p);
    if (h.batch_length < batch::kMinBatchLength) return Status::Corruption(seg.log_path());
    if (h.max_timestamp >= ts && h.last_offset() >= start) {
      if (h.log_append_time())  // every record carries the batch's time
        return std::make_pair(std::max(h.base_offset, start), h.max_timestamp);
      HR_RETURN_IF_ERROR(ReadBatch(seg, pos, h.total_size(), &buf));
      int32_t min_delta = static_cast<int32_t>(std::max<int64_t>(0, start - h.base_offset));
      HR_ASSIGN_OR_RETURN(batch::RecordAtTime r, batch::FirstRecordAtOrAfter(buf, ts, min_delta));
      if (r.delta >= 0) return std::make_pair(h.base_offset + r.delta, r.timestamp);
    }
    pos += h.total_size();
  }
  return Status::NotFound("no record at or after the timestamp");
}

Result<std::pair<Offset, TimestampMs>> LogImpl::OffsetForTime(TimestampMs ts) const {
  if (closed_.load()) return Status::Closed(dir_);
  const Offset start = start_offset();
  for (const std::shared_ptr<Segment>& seg : SegmentsFrom(start)) {
    if (seg->max_timestamp().first < ts) continue;
    auto r = FindTimeInSegment(*seg, ts, start);
    if (r.ok() || r.status().code() != StatusCode::kNotFound) return r;
  }
  return Status::NotFound("no record with timestamp >= " + std::to_string(ts.value()));
}

Result<Offset> LogImpl::ExactOffsetOfMax(const Segment& seg, TimestampMs ts, Offset batch_last) const {
  const int64_t limit = seg.size();
  FileReader reader = seg.Reader(limit, kReadReadahead);
  HR_ASSIGN_OR_RETURN(int64_t pos, seg.FindPosition(batch_last, limit, &reader));
  if (pos >= limit) return batch_last;
  HR_ASSIGN_OR_RETURN(const uint8_t* p, reader.Peek(pos, kBatchHeaderSize));
  BatchHeader h = batch::DecodeHeader(p);
  if (h.log_append_time()) return h.base_offset;
  std::vector<uint8_t> buf;
  HR_RETURN_IF_ERROR(ReadBatch(seg, pos, h.total_size(), &buf));
  HR_ASSIGN_OR_RETURN(batch::RecordAtTime r, batch::FirstRecordAtOrAfter(buf, ts, 0));
  return r.delta >= 0 ? h.base_offset + r.delta : h.last_offset();
}

Result<std::pair<TimestampMs, Offset>> LogImpl::MaxTimestamp() const {
  if (closed_.load()) return Status::Closed(dir_);
  std::shared_ptr<Segment> best;
  std::pair<TimestampMs, Offset> best_ts{kNoTimestamp, Offset(-1)};
  for (const std::shared_ptr<Segment>& seg : SegmentsFrom(start_offset())) {
    auto ts = seg->max_timestamp();
    if (ts.first > best_ts.first) {
      best_ts = ts;
      best = seg;
    }
  }
  if (!best || best_ts.first < TimestampMs(0)) return Status::NotFound("no timestamps in the log");
  HR_ASSIGN_OR_RETURN(Offset exact, ExactOffsetOfMax(*best, best_ts.first, best_ts.second));
  return std::make_pair(best_ts.first, exact);
}

}  // namespace headrace
