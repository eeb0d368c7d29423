// RecordBatch v2: header parsing, one-pass validation, in-place rewrites,
// decoding, and reading end-transaction markers. Building batches is
// record_batch_build.cc. The byte layout is in docs/log-format.md.
#include "headrace/record_batch.h"

#include <algorithm>
#include <string>

#include "common/crc32c.h"
#include "log/coding.h"
#include "log/compression.h"
#include "log/record_batch_internal.h"

namespace headrace {
namespace {

// A record's timestamp: the batch's base timestamp plus the record's delta,
// both untrusted input, so the sum wraps (two's complement) instead of
// overflowing; a nonsense timestamp is the producer's, not undefined behaviour.
int64_t RecordTimestamp(int64_t base, int64_t delta) {
  return static_cast<int64_t>(static_cast<uint64_t>(base) + static_cast<uint64_t>(delta));
}


using namespace coding;  // NOLINT: the encoding helpers are the vocabulary here
using namespace batch;   // NOLINT

// One record as it lies in the batch; pointers into the batch bytes.
struct RecordView {
  int64_t timestamp_delta = 0;
  int32_t offset_delta = 0;
  int32_t key_len = -1;  // -1 = null
  const uint8_t* key = nullptr;
  int32_t value_len = -1;
  const uint8_t* value = nullptr;
  int32_t header_count = 0;
  const uint8_t* headers = nullptr;  // header_count (key, value) pairs
};

// Reads a length-prefixed byte string; -1 = null when `nullable`.
bool ReadBytes(const uint8_t** p, const uint8_t* end, bool nullable, int32_t* len,
               const uint8_t** data) {
  if (!ReadVarint32(p, end, len)) return false;
  if (*len < 0) return nullable && *len == -1;
  if (end - *p < *len) return false;
  *data = *p;
  *p += *len;
  return true;
}

// Parses the record body [p, end) (after its length varint).
Status ParseRecordBody(const uint8_t* p, const uint8_t* end, int index, RecordView* r) {
  auto bad = [index](const char* what) {
    return Status::Corruption("record " + std::to_string(index) + ": " + what);
  };
  if (p == end) return bad("empty record body");
  ++p;  // attributes (unused in v2)
  if (!ReadVarint64(&p, end, &r->timestamp_delta)) return bad("bad timestamp delta");
  if (!ReadVarint32(&p, end, &r->offset_delta)) return bad("bad offset delta");
  if (!ReadBytes(&p, end, true, &r->key_len, &r->key)) return bad("bad key length");
  if (!ReadBytes(&p, end, true, &r->value_len, &r->value)) return bad("bad value length");
  if (!ReadVarint32(&p, end, &r->header_count) || r->header_count < 0)
    return bad("bad header count");
  r->headers = p;
  for (int32_t h = 0; h < r->header_count; ++h) {
    int32_t len;
    const uint8_t* data;
    if (!ReadBytes(&p, end, false, &len, &data)) return bad("bad header key");
    if (!ReadBytes(&p, end, true, &len, &data)) return bad("bad header value");
  }
  if (p != end) return bad("record length does not match its fields");
  return Status::OK();
}

// Calls fn(const RecordView&) for each record of an uncompressed batch.
// Checks that exactly `count` records fill the records section.
template <typename Fn>
Status ForEachRecord(const uint8_t* p, const uint8_t* end, int32_t count, Fn&& fn) {
  int32_t i = 0;
  for (; p < end; ++i) {
    if (i >= count)
      return Status::Corruption("record count " + std::to_string(count) +
                                " is smaller than the records present");
    int32_t len;
    if (!ReadVarint32(&p, end, &len) || len < 0 || end - p < len)
      return Status::Corruption("record " + std::to_string(i) + ": bad record length");
    RecordView r;
    HR_RETURN_IF_ERROR(ParseRecordBody(p, p + len, i, &r));
    HR_RETURN_IF_ERROR(fn(r, i));
    p += len;
  }
  if (i != count)
    return Status::Corruption("record count " + std::to_string(count) + " but " +
                              std::to_string(i) + " records present");
  return Status::OK();
}

// ---- the validation walk: the acceptance of ForEachRecord + ParseRecordBody
// + "offset delta == index", without building RecordViews or Statuses. It
// only tells good from bad; on bad, the slow walk above says why.

// Varints of one or two bytes (values -8192..8191) are the common case in
// record fields; longer ones take the general decoder.
inline bool FastVarint64(const uint8_t** p, const uint8_t* end, int64_t* out) {
  const uint8_t* q = *p;
  if (end - q >= 2) {
    uint32_t b0 = q[0], b1 = q[1];
    if (b0 < 0x80 || b1 < 0x80) {
      uint64_t raw = b0 < 0x80 ? b0 : (b0 & 0x7f) | (b1 << 7);
      *out = ZigZagDecode(raw);
      *p = q + (b0 < 0x80 ? 1 : 2);
      return true;
    }
  }
  return ReadVarint64(p, end, out);
}

inline bool FastVarint32(const uint8_t** p, const uint8_t* end, int32_t* out) {
  const uint8_t* q = *p;
  if (end - q >= 2 && (q[0] < 0x80 || q[1] < 0x80)) {
    int64_t v;
    FastVarint64(p, end, &v);  // at most 14 bits: always within int32
    *out = static_cast<int32_t>(v);
    return true;
  }
  return ReadVarint32(p, end, out);
}

// Skips a length-prefixed byte string; -1 = null only when `nullable`.
inline bool SkipBytes(const uint8_t** p, const uint8_t* end, bool nullable) {
  int32_t len;
  if (!FastVarint32(p, end, &len)) return false;
  if (len < 0) return nullable && len == -1;
  if (end - *p < len) return false;
  *p += len;
  return true;
}

// One record body [p, end) whose offset delta must be `i` (or, when
// `gaps_below` >= 0, any delta in (i - 1, gaps_below]: a cleaned batch);
// sets its timestamp and offset deltas.
inline bool CheckRecordBody(const uint8_t* p, const uint8_t* end, int32_t i, int64_t* ts_delta,
                            int32_t gaps_below, int32_t* delta_out) {
  if (p == end) return false;
  ++p;  // attributes
  int32_t delta, header_count;
  if (!FastVarint64(&p, end, ts_delta) || !FastVarint32(&p, end, &delta)) return false;
  if (gaps_below < 0 ? delta != i : (delta < i || delta > gaps_below)) return false;
  *delta_out = delta;
  if (!SkipBytes(&p, end, true) || !SkipBytes(&p, end, true)) return false;  // key, value
  if (!FastVarint32(&p, end, &header_count) || header_count < 0) return false;
  for (int32_t h = 0; h < header_count; ++h)
    if (!SkipBytes(&p, end, false) || !SkipBytes(&p, end, true)) return false;
  return p == end;
}

// Walks exactly `count` records over [p, end), in steps (WalkTo) so that
// validation can follow the CRC pass chunk by chunk while the bytes are in
// cache. Keeps the largest timestamp (first record reaching it).
struct RecordWalker {
  const uint8_t* p;
  const uint8_t* end;
  int32_t count;
  int64_t base_ts;
  int64_t max_ts;
  int32_t max_delta;
  int32_t i = 0;
  bool ok = true;
  int32_t gaps_below = -1;  // >= 0: a cleaned batch, deltas increase up to it
  int32_t next_delta = 0;   // the smallest delta the next record may have

  // Walks the records that start before `limit`; ok = false at a bad one.
  void WalkTo(const uint8_t* limit) {
    while (ok && p < limit && p < end) {
      int32_t len;
      int64_t ts_delta;
      int32_t delta = 0;
      if (i >= count || !FastVarint32(&p, end, &len) || len < 0 || end - p < len ||
          !CheckRecordBody(p, p + len, next_delta, &ts_delta, gaps_below, &delta)) {
        ok = false;
        return;
      }
      int64_t ts = RecordTimestamp(base_ts, ts_delta);
      if (ts > max_ts) {
        max_ts = ts;
        max_delta = delta;
      }
      p += len;
      ++i;
      next_delta = delta + 1;
    }
  }
  // True when the walk reached the end with exactly `count` good records.
  bool Done() const { return ok && p == end && i == count; }
};

constexpr size_t kFusedChunk = 32 * 1024;  // CRC step of the fused pass

// Why RecordWalker refused the records (the slow, descriptive walk): an
// error of the records themselves, INVALID_RECORD in Kafka's terms.
Status DiagnoseRecords(const uint8_t* p, const uint8_t* end, int32_t count) {
  Status st = ForEachRecord(p, end, count, [](const RecordView& r, int32_t i) -> Status {
    if (r.offset_delta != i)
      return Status::Corruption("record " + std::to_string(i) + " has offset delta " +
                                std::to_string(r.offset_delta));
    return Status::OK();
  });
  if (st.ok()) st = Status::Corruption("bad records");
  return Status::Corruption(st.message()).WithDetail(kInvalidRecordDetail);
}

// The walk's facts as BatchInfo fields (uncompressed or decompressed records).
void RecordFacts(const RecordWalker& w, const BatchHeader& h, batch::BatchInfo* info) {
  if (h.log_append_time()) {
    info->max_timestamp = h.max_timestamp;
    info->max_timestamp_delta = 0;
    return;
  }
  info->max_timestamp = TimestampMs(w.max_ts);
  info->max_timestamp_delta = w.max_delta;
}


}  // namespace

namespace batch {

BatchHeader DecodeHeader(const uint8_t* p) {
  BatchHeader h;
  h.base_offset = Offset(static_cast<int64_t>(LoadBE64(p + kBaseOffsetPos)));
  h.batch_length = static_cast<int32_t>(LoadBE32(p + kLengthPos));
  h.partition_leader_epoch = static_cast<int32_t>(LoadBE32(p + kLeaderEpochPos));
  h.magic = static_cast<int8_t>(p[kMagicPos]);
  h.crc = LoadBE32(p + kCrcPos);
  h.attributes = static_cast<int16_t>(LoadBE16(p + kAttributesPos));
  h.last_offset_delta = static_cast<int32_t>(LoadBE32(p + kLastOffsetDeltaPos));
  h.base_timestamp = TimestampMs(static_cast<int64_t>(LoadBE64(p + kBaseTimestampPos)));
  h.max_timestamp = TimestampMs(static_cast<int64_t>(LoadBE64(p + kMaxTimestampPos)));
  h.producer_id = static_cast<int64_t>(LoadBE64(p + kProducerIdPos));
  h.producer_epoch = static_cast<int16_t>(LoadBE16(p + kProducerEpochPos));
  h.base_sequence = static_cast<int32_t>(LoadBE32(p + kBaseSequencePos));
  h.record_count = static_cast<int32_t>(LoadBE32(p + kRecordCountPos));
  return h;
}

uint32_t ComputeCrc(std::span<const uint8_t> b) {
  return crc32c::Value(b.data() + kAttributesPos, b.size() - kAttributesPos);
}

Result<std::span<const uint8_t>> RecordsSection(std::span<const uint8_t> b, std::string* scratch) {
  BatchHeader h = DecodeHeader(b.data());
  std::span<const uint8_t> records = b.subspan(kBatchHeaderSize);
  if (h.compression() == Compression::kNone) return records;
  Status st = compression::Decompress(h.compression(), records, scratch);
  if (!st.ok())
    return Status::Corruption(compression::CodecName(h.compression()) + " batch: " + st.message());
  return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(scratch->data()),
                                  scratch->size());
}

Result<TimestampMs> MinRecordTimestamp(std::span<const uint8_t> records, const BatchHeader& h) {
  if (h.log_append_time()) return h.max_timestamp;
  int64_t min_ts = INT64_MAX;
  HR_RETURN_IF_ERROR(ForEachRecord(records.data(), records.data() + records.size(), h.record_count,
                                   [&](const RecordView& r, int32_t) -> Status {
                                     int64_t ts = RecordTimestamp(h.base_timestamp.value(),
                                                                  r.timestamp_delta);
                                     if (ts != kNoTimestamp.value() && ts < min_ts) min_ts = ts;
                                     return Status::OK();
                                   }));
  return min_ts == INT64_MAX ? kNoTimestamp : TimestampMs(min_ts);
}

Result<BatchInfo> ValidateBatchInfo(std::span<const uint8_t> bytes, std::string* scratch,
                                    bool allow_gaps) {
  HR_ASSIGN_OR_RETURN(BatchHeader h, ParseBatchHeader(bytes));
  std::span<const uint8_t> b = bytes.first(h.total_size());
  const uint8_t* records = b.data() + kBatchHeaderSize;
  const uint8_t* end = b.data() + b.size();
  // One pass: CRC a chunk, then walk the records starting in it (when the
  // batch is uncompressed). Errors are reported in the order of the checks
  // below, whatever the walk found.
  const bool walk = (h.attributes & kCompressionMask) == 0;
  RecordWalker w{records, end, h.record_count, h.base_timestamp.value(), kNoTimestamp.value(),
                 h.record_count > 0 ? 0 : h.last_offset_delta};
  if (allow_gaps) w.gaps_below = h.last_offset_delta;
  uint32_t crc = 0;
  for (const uint8_t* c = b.data() + kAttributesPos; c < end;) {
    size_t n = std::min<size_t>(kFusedChunk, end - c);
    crc = crc32c::Extend(crc, c, n);
    c += n;
    if (walk) w.WalkTo(c);
  }
  if (crc != h.crc)
    return Status::Corruption("CRC mismatch: stored " + std::to_string(h.crc) + ", computed " +
                              std::to_string(crc));
  if (h.record_count < 0)
    return Status::Corruption("negative record count " + std::to_string(h.record_count));
  if (h.record_count > 0 &&
      (allow_gaps ? h.record_count > int64_t{h.last_offset_delta} + 1
                  : h.last_offset_delta != h.record_count - 1))
    return Status::Corruption("last offset delta " + std::to_string(h.last_offset_delta) +
                              " does not match record count " + std::to_string(h.record_count));
  int codec = h.attributes & kCompressionMask;
  if (codec > static_cast<int>(Compression::kZstd))
    return Status::Corruption("unknown compression codec " + std::to_string(codec));
  BatchInfo info{h, h.max_timestamp, h.last_offset_delta};
  if (h.compression() != Compression::kNone) {
    if (scratch == nullptr) return info;
    HR_ASSIGN_OR_RETURN(std::span<const uint8_t> section, RecordsSection(b, scratch));
    const uint8_t* begin = section.data();
    RecordWalker cw{begin, begin + section.size(), h.record_count, h.base_timestamp.value(),
                    kNoTimestamp.value(), h.record_count > 0 ? 0 : h.last_offset_delta};
    if (allow_gaps) cw.gaps_below = h.last_offset_delta;
    cw.WalkTo(cw.end);
    if (!cw.Done()) return DiagnoseRecords(begin, cw.end, h.record_count);
    RecordFacts(cw, h, &info);
    return info;
  }
  if (!w.Done()) return DiagnoseRecords(records, end, h.record_count);
  RecordFacts(w, h, &info);
  return info;
}

}  // namespace batch

Result<BatchHeader> ParseBatchHeader(std::span<const uint8_t> bytes) {
  if (bytes.size() < static_cast<size_t>(kBatchHeaderSize))
    return Status::Corruption("batch header needs " + std::to_string(kBatchHeaderSize) +
                              " bytes, have " + std::to_string(bytes.size()));
  BatchHeader h = batch::DecodeHeader(bytes.data());
  if (h.batch_length < batch::kMinBatchLength)
    return Status::Corruption("batch length " + std::to_string(h.batch_length) +
                              " below the header size");
  if (static_cast<uint64_t>(h.total_size()) > bytes.size())
    return Status::Corruption("batch length " + std::to_string(h.batch_length) +
                              " runs past the " + std::to_string(bytes.size()) +
                              " bytes available");
  if (h.magic != kMagicV2)
    return Status::Unsupported("magic " + std::to_string(h.magic) + " (only v2 is supported)");
  return h;
}

Result<BatchHeader> ValidateBatch(std::span<const uint8_t> bytes) {
  std::string scratch;
  HR_ASSIGN_OR_RETURN(batch::BatchInfo info, batch::ValidateBatchInfo(bytes, &scratch));
  return info.header;
}

Result<BatchHeader> ValidateStoredBatch(std::span<const uint8_t> bytes) {
  std::string scratch;
  HR_ASSIGN_OR_RETURN(batch::BatchInfo info,
                      batch::ValidateBatchInfo(bytes, &scratch, /*allow_gaps=*/true));
  return info.header;
}

void SetBaseOffset(std::span<uint8_t> b, Offset base) {
  coding::StoreBE64(b.data() + batch::kBaseOffsetPos, static_cast<uint64_t>(base.value()));
}

void SetPartitionLeaderEpoch(std::span<uint8_t> b, LeaderEpoch epoch) {
  coding::StoreBE32(b.data() + batch::kLeaderEpochPos, static_cast<uint32_t>(epoch.value()));
}

void SetLogAppendTime(std::span<uint8_t> b, TimestampMs ts) {
  uint16_t attrs = coding::LoadBE16(b.data() + batch::kAttributesPos);
  coding::StoreBE16(b.data() + batch::kAttributesPos, attrs | batch::kTimestampTypeBit);
  coding::StoreBE64(b.data() + batch::kMaxTimestampPos, static_cast<uint64_t>(ts.value()));
  coding::StoreBE32(b.data() + batch::kCrcPos, batch::ComputeCrc(b));
}

Result<batch::RecordAtTime> batch::FirstRecordAtOrAfter(std::span<const uint8_t> b,
                                                        TimestampMs ts, int32_t min_delta) {
  BatchHeader h = DecodeHeader(b.data());
  std::string scratch;
  HR_ASSIGN_OR_RETURN(std::span<const uint8_t> section, RecordsSection(b, &scratch));
  RecordAtTime found;
  Status st = ForEachRecord(
      section.data(), section.data() + section.size(), h.record_count,
      [&](const RecordView& r, int32_t i) -> Status {
        TimestampMs t = h.log_append_time() ? h.max_timestamp
                                            : TimestampMs(RecordTimestamp(h.base_timestamp.value(),
                                                                          r.timestamp_delta));
        if (found.delta < 0 && r.offset_delta >= min_delta && t >= ts) found = {r.offset_delta, t};
        return Status::OK();
      });
  if (!st.ok()) return st;
  return found;
}

Result<std::string> ConvertCompression(std::span<const uint8_t> b, Compression target) {
  HR_ASSIGN_OR_RETURN(BatchHeader h, ParseBatchHeader(b));
  b = b.first(h.total_size());
  std::string scratch, out(reinterpret_cast<const char*>(b.data()), kBatchHeaderSize);
  HR_ASSIGN_OR_RETURN(std::span<const uint8_t> records, batch::RecordsSection(b, &scratch));
  if (target == Compression::kNone) {
    out.append(reinterpret_cast<const char*>(records.data()), records.size());
  } else {
    std::string packed;
    HR_RETURN_IF_ERROR(compression::Compress(target, records, &packed));
    out += packed;
  }
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  uint16_t attrs = (h.attributes & ~kCompressionMask) | static_cast<uint16_t>(target);
  StoreBE16(p + kAttributesPos, attrs);
  StoreBE32(p + kLengthPos, static_cast<uint32_t>(out.size() - kBatchLogOverhead));
  StoreBE32(p + kCrcPos, ComputeCrc({p, out.size()}));
  return out;
}

Status batch::ForEachRawRecord(std::span<const uint8_t> records, int32_t count,
                               const std::function<Status(const RawRecord&)>& fn) {
  const uint8_t* p = records.data();
  const uint8_t* end = p + records.size();
  return ForEachRecord(p, end, count, [&](const RecordView& r, int32_t) -> Status {
    // ForEachRecord visits records in order; `p` tracks the current one's start.
    const uint8_t* start = p;
    int32_t len = 0;
    ReadVarint32(&p, end, &len);
    p += len;
    RawRecord raw;
    raw.bytes = {start, static_cast<size_t>(p - start)};
    raw.offset_delta = r.offset_delta;
    raw.has_key = r.key_len >= 0;
    if (raw.has_key) raw.key = {reinterpret_cast<const char*>(r.key), static_cast<size_t>(r.key_len)};
    raw.null_value = r.value_len < 0;
    return fn(raw);
  });
}

Status batch::ForEachRecordFields(std::span<const uint8_t> records, int32_t count,
                                  const std::function<Status(const RecordFields&)>& fn) {
  const uint8_t* p = records.data();
  const uint8_t* end = p + records.size();
  return ForEachRecord(p, end, count, [&](const RecordView& r, int32_t) -> Status {
    int32_t len = 0;  // ForEachRecord visits records in order; `p` tracks the current one
    ReadVarint32(&p, end, &len);
    p += len;
    RecordFields f;
    f.timestamp_delta = r.timestamp_delta;
    f.offset_delta = r.offset_delta;
    f.key_len = r.key_len;
    f.key = r.key;
    f.value_len = r.value_len;
    f.value = r.value;
    f.header_count = r.header_count;
    f.headers = r.headers;
    f.end = p;
    return fn(f);
  });
}

void batch::NextHeader(const uint8_t** p, const uint8_t* end, std::string_view* key,
                       int32_t* value_len, const uint8_t** value) {
  int32_t klen = 0;
  const uint8_t* k = nullptr;
  ReadBytes(p, end, false, &klen, &k);
  *key = {reinterpret_cast<const char*>(k), static_cast<size_t>(klen)};
  *value_len = -1;
  *value = nullptr;
  ReadBytes(p, end, true, value_len, value);
}

Result<std::string> batch::RebuildBatch(std::span<const uint8_t> b,
                                        std::span<const uint8_t> records, int32_t count) {
  BatchHeader h = DecodeHeader(b.data());
  std::string out(reinterpret_cast<const char*>(b.data()), kBatchHeaderSize);
  if (h.compression() == Compression::kNone) {
    out.append(reinterpret_cast<const char*>(records.data()), records.size());
  } else {
    std::string packed;
    HR_RETURN_IF_ERROR(compression::Compress(h.compression(), records, &packed));
    out += packed;
  }
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  StoreBE32(p + kRecordCountPos, static_cast<uint32_t>(count));
  StoreBE32(p + kLengthPos, static_cast<uint32_t>(out.size() - kBatchLogOverhead));
  StoreBE32(p + kCrcPos, ComputeCrc({p, out.size()}));
  return out;
}

void batch::SetMaxTimestamp(std::span<uint8_t> b, TimestampMs ts) {
  coding::StoreBE64(b.data() + batch::kMaxTimestampPos, static_cast<uint64_t>(ts.value()));
  coding::StoreBE32(b.data() + batch::kCrcPos, batch::ComputeCrc(b));
}

namespace {

std::optional<std::string> CopyBytes(const uint8_t* p, int32_t len) {
  if (len < 0) return std::nullopt;
  return std::string(reinterpret_cast<const char*>(p), len);
}

// Appends the records of one validated batch to `out`.
Status DecodeBatchRecords(std::span<const uint8_t> b, const BatchHeader& h,
                          std::vector<Record>* out) {
  std::string scratch;
  HR_ASSIGN_OR_RETURN(std::span<const uint8_t> section, batch::RecordsSection(b, &scratch));
  const uint8_t* end = section.data() + section.size();
  return ForEachRecord(
      section.data(), end, h.record_count,
      [&](const RecordView& r, int32_t) -> Status {
        Record rec;
        rec.offset = h.base_offset + r.offset_delta;
        rec.timestamp = h.log_append_time() ? h.max_timestamp
                                            : TimestampMs(RecordTimestamp(h.base_timestamp.value(),
                                                                          r.timestamp_delta));
        rec.key = CopyBytes(r.key, r.key_len);
        rec.value = CopyBytes(r.value, r.value_len);
        const uint8_t* p = r.headers;
        for (int32_t i = 0; i < r.header_count; ++i) {
          int32_t klen = 0, vlen = -1;
          const uint8_t *k = nullptr, *v = nullptr;
          ReadBytes(&p, end, false, &klen, &k);  // validated by ForEachRecord
          ReadBytes(&p, end, true, &vlen, &v);
          rec.headers.push_back({std::string(reinterpret_cast<const char*>(k), klen),
                                 CopyBytes(v, vlen)});
        }
        out->push_back(std::move(rec));
        return Status::OK();
      });
}

}  // namespace

Result<std::vector<Record>> DecodeRecords(std::span<const uint8_t> bytes) {
  std::vector<Record> out;
  while (bytes.size() >= static_cast<size_t>(kBatchLogOverhead)) {
    int32_t len = static_cast<int32_t>(LoadBE32(bytes.data() + kLengthPos));
    if (len >= kMinBatchLength &&
        static_cast<uint64_t>(kBatchLogOverhead) + static_cast<uint64_t>(len) > bytes.size())
      break;  // trailing partial batch
    HR_ASSIGN_OR_RETURN(BatchHeader h, ValidateStoredBatch(bytes));
    std::span<const uint8_t> b = bytes.first(h.total_size());
    bytes = bytes.subspan(h.total_size());
    if (h.is_control()) continue;
    HR_RETURN_IF_ERROR(DecodeBatchRecords(b, h, &out));
  }
  return out;
}

Result<EndTxnMarker> ParseEndTxnMarker(std::span<const uint8_t> batch) {
  HR_ASSIGN_OR_RETURN(BatchHeader h, ParseBatchHeader(batch));
  if (!h.is_control()) return Status::Corruption("not a control batch");
  if (h.compression() != Compression::kNone) {
    return Status::Corruption("a compressed control batch");
  }
  const uint8_t* p = batch.data() + kBatchHeaderSize;
  const uint8_t* end = batch.data() + h.total_size();
  std::optional<EndTxnMarker> found;
  int16_t type = -1;
  Status st = ForEachRecord(p, end, h.record_count, [&](const RecordView& r, int32_t i) -> Status {
    if (i > 0) return Status::OK();
    if (r.key_len < 4) return Status::Corruption("control record key shorter than 4 bytes");
    type = static_cast<int16_t>(LoadBE16(r.key + 2));
    if (type != kControlTypeAbort && type != kControlTypeCommit) return Status::OK();
    if (r.value_len < 6) return Status::Corruption("end-transaction marker value too short");
    EndTxnMarker m;
    m.commit = type == kControlTypeCommit;
    m.coordinator_epoch = static_cast<int32_t>(LoadBE32(r.value + 2));
    found = m;
    return Status::OK();
  });
  HR_RETURN_IF_ERROR(st);
  if (!found) {
    if (type >= 0) return Status::Unsupported("control record type " + std::to_string(type));
    return Status::Corruption("a control batch without records");
  }
  return *found;
}

}  // namespace headrace
