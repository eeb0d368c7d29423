// RecordColumns: record batches of a Fetch response into Arrow column
// buffers. The batch layout is the log room's (record_batch_internal.h):
// this file only walks what it parses and decides which records are rows.
#include "headrace/record_columns.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "headrace/record_batch.h"
#include "log/aborted_filter.h"
#include "log/coding.h"
#include "log/record_batch_internal.h"
#include "pipeline/columns.h"

namespace headrace {
namespace {

constexpr int64_t kMaxColumnBytes = INT32_MAX;  // Arrow binary/utf8 use int32 offsets

// Wrapping arithmetic: timestamps are untrusted input.
int64_t Add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t MsToUs(int64_t ms) { return static_cast<int64_t>(static_cast<uint64_t>(ms) * 1000u); }

}  // namespace

RecordColumns::RecordColumns(std::string topic, int32_t partition, bool include_headers)
    : topic_(std::move(topic)),
      partition_(partition),
      include_headers_(include_headers),
      cols_(std::make_unique<Columns>()) {}

RecordColumns::~RecordColumns() = default;

int64_t RecordColumns::num_rows() const { return cols_->rows(); }

int64_t RecordColumns::num_bytes() const {
  const Columns& c = *cols_;
  return c.key.bytes() + c.value.bytes() + c.header_key.bytes() + c.header_value.bytes() +
         c.rows() * (8 + 8 + 4 + 4 + 4 + static_cast<int64_t>(topic_.size()));
}

Result<AppendResult> RecordColumns::Append(std::span<const uint8_t> bytes, int64_t from,
                                           int64_t until, bool read_committed,
                                           std::span<const AbortedTransaction> aborted) {
  AppendResult out{from, 0};
  const int64_t rows_before = cols_->rows();
  AbortedFilter filter(aborted);
  while (bytes.size() >= static_cast<size_t>(kBatchLogOverhead)) {
    const int32_t len = static_cast<int32_t>(coding::LoadBE32(bytes.data() + batch::kLengthPos));
    if (len >= batch::kMinBatchLength &&
        uint64_t{kBatchLogOverhead} + static_cast<uint64_t>(len) > bytes.size())
      break;  // the last batch, cut short by the fetch size: the data ends here
    if (bytes.size() > static_cast<size_t>(batch::kMagicPos) &&
        bytes[batch::kMagicPos] < kMagicV2)
      return Status::Unsupported("message format v" + std::to_string(bytes[batch::kMagicPos]) +
                                 " (Kafka < 0.11) is not read by the Arrow decoder; the broker "
                                 "must store RecordBatch v2");
    // Header, CRC and (uncompressed) record structure; cleaned batches with
    // offset gaps are valid, as in any log.
    Result<batch::BatchInfo> info = batch::ValidateBatchInfo(bytes, nullptr, true);
    if (!info.ok())
      return Status::Corruption("corrupt record batch at offset " +
                                std::to_string(static_cast<int64_t>(
                                    coding::LoadBE64(bytes.data() + batch::kBaseOffsetPos))) +
                                ": " + info.status().message());
    const BatchHeader& h = info.value().header;
    std::span<const uint8_t> b = bytes.first(h.total_size());
    bytes = bytes.subspan(h.total_size());
    if (h.base_offset.value() >= until) break;
    out.next_offset = std::max(out.next_offset, Add(h.last_offset().value(), 1));
    const bool skip = read_committed ? filter.Skip(b, h) : h.is_control();
    if (skip || h.last_offset().value() < from) continue;
    HR_RETURN_IF_ERROR(AppendBatch(b, from, until));
    if (cols_->key.data.size() + cols_->value.data.size() > static_cast<size_t>(kMaxColumnBytes) ||
        cols_->header_key.data.size() + cols_->header_value.data.size() >
            static_cast<size_t>(kMaxColumnBytes))
      return Status::TooLarge("record columns past 2 GiB: export more often");
  }
  out.rows = cols_->rows() - rows_before;
  return out;
}

Status RecordColumns::AppendBatch(std::span<const uint8_t> b, int64_t from, int64_t until) {
  const BatchHeader h = batch::DecodeHeader(b.data());
  Result<std::span<const uint8_t>> section = batch::RecordsSection(b, &scratch_);
  if (!section.ok())
    return Status::Corruption("record batch at offset " + std::to_string(h.base_offset.value()) +
                              ": " + section.status().message());
  Columns& c = *cols_;
  const int64_t base = h.base_offset.value();
  const int32_t ts_type = h.log_append_time() ? 1 : 0;
  // Room for the values, at most the records section's size. (std::string
  // grows its capacity at least twofold, so this stays amortized linear; the
  // vectors are left to push_back, whose reserve would allocate exactly.)
  c.value.data.reserve(c.value.data.size() + section.value().size());
  // Validate the whole batch before appending any row of it: a corrupt
  // record must not leave half a batch in the columns.
  // (ValidateBatchInfo walked an uncompressed batch's records already.)
  Status st;
  if (h.compression() != Compression::kNone)
    st = batch::ForEachRecordFields(section.value(), h.record_count,
                                    [](const batch::RecordFields&) { return Status::OK(); });
  if (!st.ok())
    return Status::Corruption("record batch at offset " + std::to_string(base) + ": " +
                              st.message());
  return batch::ForEachRecordFields(
      section.value(), h.record_count, [&](const batch::RecordFields& r) -> Status {
        const int64_t off = Add(base, r.offset_delta);
        if (off < from || off >= until) return Status::OK();
        c.key.Append(r.key, r.key_len);
        c.value.Append(r.value, r.value_len);
        c.offset.push_back(off);
        const int64_t ts = h.log_append_time() ? h.max_timestamp.value()
                                               : Add(h.base_timestamp.value(), r.timestamp_delta);
        c.timestamp_valid.Append(ts >= 0);
        c.timestamp_us.push_back(ts >= 0 ? MsToUs(ts) : 0);
        c.timestamp_type.push_back(ts_type);
        if (include_headers_) {
          const uint8_t* p = r.headers;
          for (int32_t i = 0; i < r.header_count; ++i) {
            std::string_view k;
            int32_t vlen;
            const uint8_t* v;
            batch::NextHeader(&p, r.end, &k, &vlen, &v);
            c.header_key.Append(reinterpret_cast<const uint8_t*>(k.data()),
                                static_cast<int32_t>(k.size()));
            c.header_value.Append(v, vlen);
          }
          c.header_offsets.push_back(static_cast<int32_t>(c.header_key.offsets.size() - 1));
        }
        return Status::OK();
      });
}

void RecordColumns::Export(ArrowArray* out) {
  pipeline::ExportColumns(std::exchange(cols_, std::make_unique<Columns>()), topic_, partition_,
                          include_headers_, out);
}

}  // namespace headrace
