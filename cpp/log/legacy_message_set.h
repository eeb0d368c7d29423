// Kafka's message formats v0 and v1 (the "MessageSet" of Produce v0-2, sent
// by clients of Kafka 0.8-0.10 and by newer clients told the broker is that
// old), up-converted to RecordBatch v2 on produce as Kafka 3.x does. The log
// stores v2 only; this is the one place that reads the older layout.
//
// A message set is a sequence of entries:
//   offset int64 | message_size int32 | crc uint32 | magic int8 (0 or 1) |
//   attributes int8 | timestamp int64 (magic 1 only) | key bytes | value bytes
// where bytes = int32 length (-1 = null) + data, and the CRC (CRC-32, IEEE)
// covers magic..end. An entry whose attributes name a codec (bits 0-2:
// gzip 1, snappy 2, lz4 3) is a wrapper: its value is the compressed inner
// message set, whose entries are not compressed themselves.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "headrace/status.h"

namespace headrace {

// True when `bytes` starts with a v0/v1 message (magic byte 0 or 1 at
// position 16, where RecordBatch v2 has its magic 2 too).
bool IsLegacyMessageSet(std::span<const uint8_t> bytes);

// The messages of `message_set` as one RecordBatch v2 (base offset 0,
// producer id -1), compressed with the codec of the first wrapper entry
// when there is one (as Kafka with compression.type=producer), else
// uncompressed. Timestamps: v1 messages keep theirs (a wrapper marked
// LogAppendTime gives its own to its inner messages); v0 messages have none
// (-1, Kafka's NO_TIMESTAMP). The log then assigns offsets and applies the
// topic's timestamp type as for any batch.
// Errors (Corruption, detail INVALID_RECORD): an empty set, a truncated
// entry, a CRC mismatch, a magic other than 0/1, a nested wrapper, a codec
// v0/v1 did not have (zstd), a value that does not decompress; a trailing
// partial entry is ignored (Kafka's producers never send one, and Kafka
// drops it too). InvalidArgument with detail INVALID_TIMESTAMP: a v1
// timestamp below -1, or timestamps too far apart for a v2 batch's deltas.
Result<std::string> ConvertLegacyMessageSet(std::span<const uint8_t> message_set);

}  // namespace headrace
