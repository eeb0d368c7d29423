// Kafka RecordBatch v2 (magic 2): parsing, validation, building and record
// decoding. This is the one place that knows the batch layout; the byte-by-
// byte description is docs/log-format.md.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "headrace/status.h"
#include "headrace/types.h"

namespace headrace {

// Fixed sizes of the v2 batch header.
inline constexpr int kBatchHeaderSize = 61;        // base offset .. record count
inline constexpr int kBatchLogOverhead = 12;       // base offset (8) + batch length (4)
inline constexpr int8_t kMagicV2 = 2;

// Status::detail() of validation errors that Kafka answers with a code of
// their own: the detail is that Kafka error code, so the broker's
// ToKafkaError passes it through (errors without one are CORRUPT_MESSAGE).
inline constexpr int32_t kInvalidRecordDetail = 87;     // INVALID_RECORD
inline constexpr int32_t kInvalidTimestampDetail = 32;  // INVALID_TIMESTAMP

enum class Compression : int8_t { kNone = 0, kGzip = 1, kSnappy = 2, kLz4 = 3, kZstd = 4 };

// The header fields of one batch, as parsed (big-endian on the wire).
struct BatchHeader {
  Offset base_offset;
  int32_t batch_length = 0;    // bytes after the length field
  int32_t partition_leader_epoch = -1;
  int8_t magic = 0;
  uint32_t crc = 0;
  int16_t attributes = 0;
  int32_t last_offset_delta = 0;
  TimestampMs base_timestamp;  // "first timestamp"
  TimestampMs max_timestamp;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  int32_t base_sequence = -1;
  int32_t record_count = 0;

  int64_t total_size() const { return kBatchLogOverhead + batch_length; }
  Offset last_offset() const { return base_offset + last_offset_delta; }
  Compression compression() const { return static_cast<Compression>(attributes & 0x7); }
  bool log_append_time() const { return attributes & 0x8; }
  bool is_transactional() const { return attributes & 0x10; }
  bool is_control() const { return attributes & 0x20; }
};

// Parses the header at the start of `bytes` without checking the CRC.
// Errors: Corruption when fewer than kBatchHeaderSize bytes or a length that
// runs past `bytes` or is below the header size; Unsupported for magic != 2.
Result<BatchHeader> ParseBatchHeader(std::span<const uint8_t> bytes);

// Full validation of one batch at the start of `bytes`: header, CRC32C over
// attributes..end, record_count >= 0, last_offset_delta consistent with
// record_count (== record_count - 1 for non-empty uncompressed and
// compressed batches), and that the records (decompressed when the batch
// is compressed) parse, have offset deltas 0..n-1 and match the count
// (errors of the records carry kInvalidRecordDetail). Returns the header.
Result<BatchHeader> ValidateBatch(std::span<const uint8_t> bytes);
// ValidateBatch for a batch read from a log: a batch rewritten by the log
// cleaner (docs/compaction.md: fewer records than last offset delta + 1,
// offset deltas increasing but not dense) is valid too.
Result<BatchHeader> ValidateStoredBatch(std::span<const uint8_t> bytes);

// Rewrites the base offset field in place (the CRC does not cover it).
void SetBaseOffset(std::span<uint8_t> batch, Offset base);
// Rewrites the partition leader epoch field in place (not covered by the
// CRC either); the leader stamps its epoch on every appended batch.
void SetPartitionLeaderEpoch(std::span<uint8_t> batch, LeaderEpoch epoch);
// Sets LogAppendTime: max_timestamp = ts, the timestamp-type bit, and
// recomputes the CRC (which covers those fields).
void SetLogAppendTime(std::span<uint8_t> batch, TimestampMs ts);

// The whole batch at the start of `batch` with its records section
// re-encoded with `target` (kNone = uncompressed): same header fields and
// records, the codec bits, length and CRC rewritten. The input's CRC is not
// checked (validate first). Errors: Corruption when its payload does not
// decompress.
Result<std::string> ConvertCompression(std::span<const uint8_t> batch, Compression target);

// One record to build.
struct RecordHeader {
  std::string key;
  std::optional<std::string> value;
};
struct RecordInput {
  std::optional<std::string> key;
  std::optional<std::string> value;
  std::vector<RecordHeader> headers;
  TimestampMs timestamp = kNoTimestamp;  // kNoTimestamp = "now" at build time
};

// The producer fields and attribute bits of a batch to build.
struct BatchProducerFields {
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  int32_t base_sequence = -1;
  bool transactional = false;  // attribute bit 4
  bool control = false;        // attribute bit 5
};

// Builds one uncompressed RecordBatch v2 with base offset 0, CreateTime
// timestamps and a valid CRC; producer id -1 unless `producer` says.
// no_timestamp_is_now=false keeps kNoTimestamp as -1 (Kafka's NO_TIMESTAMP:
// messages up-converted from format v0, which had none).
// REQUIRES: the timestamps differ by at most INT64_MAX (they are stored as
// deltas from the first).
std::string BuildBatch(const std::vector<RecordInput>& records,
                       const BatchProducerFields& producer = {}, bool no_timestamp_is_now = true);

// An end-of-transaction marker (KIP-98): the one record of a control batch
// (transactional | control) whose key is int16 version 0 + int16 type
// (0 = ABORT, 1 = COMMIT) and whose value is int16 version 0 + int32
// coordinator epoch.
struct EndTxnMarker {
  bool commit = false;
  int32_t coordinator_epoch = 0;
};
// Builds the control batch of `marker` for a producer: base sequence -1,
// one record at `timestamp` (kNoTimestamp = now).
std::string BuildEndTxnMarkerBatch(int64_t producer_id, int16_t producer_epoch,
                                   const EndTxnMarker& marker, TimestampMs timestamp = kNoTimestamp);
// The marker of the control batch at the start of `batch` (the whole batch;
// its CRC is not checked). Errors: Corruption when it is not a control
// batch, or its first record is not an end-transaction marker (control
// types other than ABORT/COMMIT are Unsupported).
Result<EndTxnMarker> ParseEndTxnMarker(std::span<const uint8_t> batch);

// One entry of a Fetch response's aborted-transactions list: the producer
// whose transaction aborted and the first offset it wrote in it.
struct AbortedTransaction {
  int64_t producer_id = -1;
  int64_t first_offset = -1;
};

// A decoded record.
struct Record {
  Offset offset;
  TimestampMs timestamp;
  std::optional<std::string> key;
  std::optional<std::string> value;
  std::vector<RecordHeader> headers;
};

// Decodes every record of the back-to-back batches in `bytes` (as read from
// a log: cleaned batches with offset gaps too, ValidateStoredBatch); a trailing
// partial batch is ignored (fetch results may end with one). Control batches
// are skipped; compressed batches are decompressed. Errors: Corruption.
Result<std::vector<Record>> DecodeRecords(std::span<const uint8_t> bytes);

}  // namespace headrace
