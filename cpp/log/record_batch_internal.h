// Internal batch helpers shared by record_batch.cc, the segment scanner and
// the log: field positions of the v2 header, a no-check header decoder and
// the one-pass validator that also yields record-level facts.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <span>
#include <string>

#include "headrace/record_batch.h"
#include "headrace/status.h"

namespace headrace::batch {

// Byte positions of the v2 header fields (see docs/log-format.md).
inline constexpr int kBaseOffsetPos = 0;
inline constexpr int kLengthPos = 8;
inline constexpr int kLeaderEpochPos = 12;
inline constexpr int kMagicPos = 16;
inline constexpr int kCrcPos = 17;
inline constexpr int kAttributesPos = 21;  // the CRC covers [21, end)
inline constexpr int kLastOffsetDeltaPos = 23;
inline constexpr int kBaseTimestampPos = 27;
inline constexpr int kMaxTimestampPos = 35;
inline constexpr int kProducerIdPos = 43;
inline constexpr int kProducerEpochPos = 51;
inline constexpr int kBaseSequencePos = 53;
inline constexpr int kRecordCountPos = 57;
// Smallest legal batch_length: the header after the length field.
inline constexpr int kMinBatchLength = kBatchHeaderSize - kBatchLogOverhead;
inline constexpr int16_t kCompressionMask = 0x7;
inline constexpr int16_t kTimestampTypeBit = 0x8;
// The type in a control record's key: an end-transaction marker's outcome.
inline constexpr int16_t kControlTypeAbort = 0;
inline constexpr int16_t kControlTypeCommit = 1;

// Decodes the 61 header bytes at `p` with no checks at all.
// REQUIRES: p points at kBatchHeaderSize readable bytes.
BatchHeader DecodeHeader(const uint8_t* p);

// What full validation learnt about one batch.
struct BatchInfo {
  BatchHeader header;
  // Largest record timestamp and the offset delta of the first record that
  // carries it. For compressed batches (records not parsed) these come from
  // the header: max_timestamp and last_offset_delta.
  TimestampMs max_timestamp;
  int32_t max_timestamp_delta = 0;
};

// Validates the batch at the start of `bytes` in one pass (CRC32C over
// attributes..end, header consistency, and for uncompressed batches every
// record: lengths, offset deltas 0..n-1, count). A compressed batch's
// records are checked the same way when `scratch` is given (decompressed
// into it, bounded by compression::kMaxDecompressedBytes); without it only
// its header is. Errors as ValidateBatch; errors of the records
// themselves (count, offset deltas, record structure) carry
// kInvalidRecordDetail, a payload that does not decompress does not.
// With `allow_gaps` (batches already in a log: recovery, a follower's
// append) a batch rewritten by the log cleaner is valid too: fewer records
// than last offset delta + 1, offset deltas increasing up to it.
Result<BatchInfo> ValidateBatchInfo(std::span<const uint8_t> bytes,
                                    std::string* scratch = nullptr, bool allow_gaps = false);

// Smallest record timestamp other than kNoTimestamp in the records section
// `records` of a batch with header `h` (kNoTimestamp when none; the
// header's max timestamp for LogAppendTime batches). Kept out of the
// validation walk, which every append pays for; only logs with timestamp
// bounds ask. Errors: Corruption.
Result<TimestampMs> MinRecordTimestamp(std::span<const uint8_t> records, const BatchHeader& h);

// The records section of a whole batch: its own bytes, or for a compressed
// batch their decompressed form, written to *scratch (which must outlive
// the span). Errors: Corruption when the payload does not decompress.
Result<std::span<const uint8_t>> RecordsSection(std::span<const uint8_t> batch,
                                                std::string* scratch);

// CRC32C of attributes..end of a whole batch.
uint32_t ComputeCrc(std::span<const uint8_t> batch);

// A record found by FirstRecordAtOrAfter.
struct RecordAtTime {
  int32_t delta = -1;  // -1 = none
  TimestampMs timestamp;
};
// The first record with offset delta >= min_delta and timestamp >= ts in a
// whole batch of any codec (LogAppendTime batches: every record has the
// batch max timestamp). Errors: Corruption.
Result<RecordAtTime> FirstRecordAtOrAfter(std::span<const uint8_t> batch, TimestampMs ts,
                                          int32_t min_delta);

// Rewrites max_timestamp (keeping the timestamp type) and the CRC.
void SetMaxTimestamp(std::span<uint8_t> batch, TimestampMs ts);

// One record of a records section as it lies there (the log cleaner's view):
// `bytes` is the whole record, its length varint included, so retained
// records are copied into a rebuilt batch unchanged (their offset and
// timestamp deltas stay relative to the batch's base).
struct RawRecord {
  std::span<const uint8_t> bytes;
  int32_t offset_delta = 0;
  bool has_key = false;
  std::string_view key;     // empty when !has_key
  bool null_value = false;  // a tombstone
};
// Calls fn(const RawRecord&) for each of the `count` records of the
// (uncompressed or decompressed) records section `records`; stops at the
// first error fn returns. Errors: Corruption for malformed records.
Status ForEachRawRecord(std::span<const uint8_t> records, int32_t count,
                        const std::function<Status(const RawRecord&)>& fn);

// One record's fields as they lie in a records section: pointers into it,
// nothing copied (the decoder into Arrow columns, cpp/pipeline, reads them).
struct RecordFields {
  int64_t timestamp_delta = 0;
  int32_t offset_delta = 0;
  int32_t key_len = -1;  // -1 = null
  const uint8_t* key = nullptr;
  int32_t value_len = -1;  // -1 = null
  const uint8_t* value = nullptr;
  int32_t header_count = 0;
  const uint8_t* headers = nullptr;  // header_count (key, value) pairs, read with NextHeader
  const uint8_t* end = nullptr;      // end of this record
};
// Calls fn(const RecordFields&) for each of the `count` records of the
// (uncompressed or decompressed) records section `records`, checking each
// record's structure as DecodeRecords does; stops at the first error fn
// returns. Errors: Corruption for malformed records or a wrong count.
Status ForEachRecordFields(std::span<const uint8_t> records, int32_t count,
                           const std::function<Status(const RecordFields&)>& fn);
// Reads the header pair at *p (a position within RecordFields::headers ..
// end) and advances past it; value_len -1 = null value.
// REQUIRES: the record was accepted by ForEachRecordFields.
void NextHeader(const uint8_t** p, const uint8_t* end, std::string_view* key, int32_t* value_len,
                const uint8_t** value);

// The batch `original` (whole, any codec) rebuilt with only `records` (whole
// raw records back to back, `count` of them, a subset of its own in order):
// same base offset, last offset delta, timestamps, producer fields and
// attributes; records section re-compressed with the batch's codec; length,
// record count and CRC rewritten. Offsets never change: the records keep
// their deltas, so the batch may have gaps (count < last offset delta + 1),
// as a Kafka log cleaner writes them. Errors: those of compression.
Result<std::string> RebuildBatch(std::span<const uint8_t> original,
                                 std::span<const uint8_t> records, int32_t count);

}  // namespace headrace::batch
