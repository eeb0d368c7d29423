// The record batch codecs, by Kafka codec id (attributes bits 0-2): the
// records section of a compressed RecordBatch v2 is one stream of
//   gzip    a gzip stream (RFC 1952; members may be concatenated),
//   snappy  the xerial framing the Java client writes (magic
//           "\x82SNAPPY\0", two int32 versions, then int32-length-prefixed
//           raw snappy blocks); plain raw snappy is accepted on input too,
//   lz4     the LZ4 frame format (not the legacy Kafka 0.8 framing),
//   zstd    one or more zstd frames.
// Sans-I/O: bytes in, bytes out. docs/log-format.md lists the framings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "headrace/record_batch.h"
#include "headrace/status.h"

namespace headrace::compression {

// Decompressed records sections above this size are refused: a batch whose
// payload inflates past it is treated as a decompression bomb (Corruption),
// never allocated. 256 MiB is far above what any client batches (librdkafka
// and the Java client bound a batch's uncompressed size by batch.size /
// message.max.bytes, 1 MiB by default).
inline constexpr size_t kMaxDecompressedBytes = 256u << 20;

// Decompresses `in` (the records section of a batch compressed with
// `codec`) into *out (replaced). Errors: Corruption when the bytes are not
// a valid stream of that codec, are truncated, or inflate above
// `max_out` bytes; InvalidArgument for kNone or an unknown codec.
Status Decompress(Compression codec, std::span<const uint8_t> in, std::string* out,
                  size_t max_out = kMaxDecompressedBytes);

// Compresses `in` with `codec` into *out (replaced), in the framing the Java
// client writes (see the head comment). Errors: InvalidArgument for kNone
// or an unknown codec; Corruption only if the codec library fails.
Status Compress(Compression codec, std::span<const uint8_t> in, std::string* out);

// "none", "gzip", "snappy", "lz4", "zstd"; "codec N" for others.
std::string CodecName(Compression codec);

}  // namespace headrace::compression
