#include "log/legacy_message_set.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "headrace/record_batch.h"
#include "log/coding.h"
#include "log/compression.h"

namespace headrace {
namespace {

using coding::LoadBE32;
using coding::LoadBE64;

constexpr size_t kLogOverhead = 12;     // offset (8) + message_size (4)
constexpr size_t kMagicPos = 16;        // in an entry: after offset, size, crc
constexpr size_t kV0HeaderSize = 4 + 1 + 1 + 4 + 4;  // crc, magic, attributes, key len, value len
constexpr int kCodecMask = 0x07;
constexpr int kLogAppendTimeBit = 0x08;

Status Bad(const std::string& what) {
  return Status::Corruption("message format v0/v1: " + what).WithDetail(kInvalidRecordDetail);
}

Status BadTimestamp(int64_t ts) {
  return Status::InvalidArgument("message format v1: timestamp " + std::to_string(ts))
      .WithDetail(kInvalidTimestampDetail);
}

// One message of a set, its fields pointing into the set.
struct Message {
  int8_t magic = 0;
  int8_t attributes = 0;
  int64_t timestamp = -1;
  std::optional<std::string> key;
  std::optional<std::string> value;
};

Result<std::optional<std::string>> ReadBytes(const uint8_t** p, const uint8_t* end) {
  if (end - *p < 4) return Bad("truncated length");
  const int32_t len = static_cast<int32_t>(LoadBE32(*p));
  *p += 4;
  if (len < 0) return std::optional<std::string>();
  if (end - *p < len) return Bad("length " + std::to_string(len) + " runs past the message");
  std::string out(reinterpret_cast<const char*>(*p), static_cast<size_t>(len));
  *p += len;
  return std::optional<std::string>(std::move(out));
}

// Parses the message of `m` (crc .. end), checking its CRC.
Result<Message> ParseMessage(std::span<const uint8_t> m) {
  if (m.size() < kV0HeaderSize) return Bad("message of " + std::to_string(m.size()) + " bytes");
  const uint32_t crc = LoadBE32(m.data());
  const uLong actual = crc32(0L, m.data() + 4, static_cast<uInt>(m.size() - 4));
  if (crc != static_cast<uint32_t>(actual)) return Bad("CRC mismatch");
  Message out;
  out.magic = static_cast<int8_t>(m[4]);
  out.attributes = static_cast<int8_t>(m[5]);
  if (out.magic != 0 && out.magic != 1) return Bad("magic " + std::to_string(out.magic));
  const uint8_t* p = m.data() + 6;
  const uint8_t* end = m.data() + m.size();
  if (out.magic == 1) {
    if (end - p < 8) return Bad("truncated timestamp");
    out.timestamp = static_cast<int64_t>(LoadBE64(p));
    p += 8;
    if (out.timestamp < -1) return BadTimestamp(out.timestamp);  // -1: none, as Kafka
  }
  HR_ASSIGN_OR_RETURN(out.key, ReadBytes(&p, end));
  HR_ASSIGN_OR_RETURN(out.value, ReadBytes(&p, end));
  if (p != end) return Bad("bytes after the value");
  return out;
}

// Calls fn(message) for every whole entry of `set`; a trailing partial
// entry ends the walk.
template <typename Fn>
Status ForEachMessage(std::span<const uint8_t> set, Fn&& fn) {
  size_t pos = 0;
  while (set.size() - pos >= kLogOverhead) {
    const int32_t size = static_cast<int32_t>(LoadBE32(set.data() + pos + 8));
    if (size < 0) return Bad("message size " + std::to_string(size));
    if (set.size() - pos - kLogOverhead < static_cast<size_t>(size)) break;
    HR_ASSIGN_OR_RETURN(Message m, ParseMessage(set.subspan(pos + kLogOverhead, size)));
    HR_RETURN_IF_ERROR(fn(std::move(m)));
    pos += kLogOverhead + static_cast<size_t>(size);
  }
  return Status::OK();
}

// XXH32 (seed 0) of fewer than 16 bytes: the xxHash specification's path
// for short inputs, all an LZ4 frame descriptor needs (liblz4 does not
// export its copy).
uint32_t ShortXxh32(const uint8_t* p, size_t n) {
  constexpr uint32_t kP1 = 2654435761u, kP2 = 2246822519u, kP3 = 3266489917u,
                     kP4 = 668265263u, kP5 = 374761393u;
  auto rotl = [](uint32_t x, int r) { return (x << r) | (x >> (32 - r)); };
  uint32_t h = kP5 + static_cast<uint32_t>(n);
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const uint32_t lane = p[i] | (p[i + 1] << 8) | (p[i + 2] << 16) | (uint32_t{p[i + 3]} << 24);
    h = rotl(h + lane * kP3, 17) * kP4;
  }
  for (; i < n; ++i) h = rotl(h + p[i] * kP5, 11) * kP1;
  h ^= h >> 15;
  h *= kP2;
  h ^= h >> 13;
  h *= kP3;
  h ^= h >> 16;
  return h;
}

// Kafka's format v0 LZ4 framing had a bug its producers keep for v0: the
// frame descriptor's checksum byte (HC) was computed over the magic number
// too. Kafka reads such frames ignoring HC; this rewrites it to the correct
// value so liblz4 accepts the frame. A frame too short to hold a
// descriptor is left for the decompressor to refuse.
void FixLz4V0HeaderChecksum(std::string* frame) {
  auto* p = reinterpret_cast<uint8_t*>(frame->data());
  if (frame->size() < 7) return;
  const uint8_t flg = p[4];
  const size_t descriptor = 2 + ((flg & 0x08) ? 8 : 0) + ((flg & 0x01) ? 4 : 0);
  if (frame->size() < 4 + descriptor + 1) return;
  p[4 + descriptor] = static_cast<uint8_t>((ShortXxh32(p + 4, descriptor) >> 8) & 0xFF);
}

RecordInput ToRecord(Message m, int64_t timestamp) {
  RecordInput r;
  r.key = std::move(m.key);
  r.value = std::move(m.value);
  r.timestamp = TimestampMs{timestamp};
  return r;
}

}  // namespace

bool IsLegacyMessageSet(std::span<const uint8_t> bytes) {
  return bytes.size() > kMagicPos && (bytes[kMagicPos] == 0 || bytes[kMagicPos] == 1);
}

Result<std::string> ConvertLegacyMessageSet(std::span<const uint8_t> message_set) {
  std::vector<RecordInput> records;
  Compression codec = Compression::kNone;
  HR_RETURN_IF_ERROR(ForEachMessage(message_set, [&](Message m) -> Status {
    const int wrapper_codec = m.attributes & kCodecMask;
    if (wrapper_codec == 0) {
      const int64_t ts = m.magic == 1 ? m.timestamp : -1;
      records.push_back(ToRecord(std::move(m), ts));
      return Status::OK();
    }
    if (wrapper_codec > static_cast<int>(Compression::kLz4))
      return Bad("codec " + std::to_string(wrapper_codec) + " in a v" + std::to_string(m.magic) +
                 " message");
    if (!m.value) return Bad("a compressed message without a value");
    const auto c = static_cast<Compression>(wrapper_codec);
    if (codec == Compression::kNone) codec = c;
    if (c == Compression::kLz4 && m.magic == 0) FixLz4V0HeaderChecksum(&*m.value);
    std::string inner;
    Status st = compression::Decompress(
        c, {reinterpret_cast<const uint8_t*>(m.value->data()), m.value->size()}, &inner);
    if (!st.ok()) return Bad(compression::CodecName(c) + " message: " + st.message());
    const bool wrapper_time = m.magic == 1 && (m.attributes & kLogAppendTimeBit) != 0;
    const int64_t wrapper_ts = m.timestamp;
    const size_t before = records.size();
    HR_RETURN_IF_ERROR(ForEachMessage(
        {reinterpret_cast<const uint8_t*>(inner.data()), inner.size()}, [&](Message in) -> Status {
          if (in.attributes & kCodecMask) return Bad("a compressed message inside another");
          const int64_t ts = in.magic == 0 ? -1 : wrapper_time ? wrapper_ts : in.timestamp;
          records.push_back(ToRecord(std::move(in), ts));
          return Status::OK();
        }));
    if (records.size() == before) return Bad("a compressed message with no inner messages");
    return Status::OK();
  }));
  if (records.empty()) return Bad("no whole message in the set");
  // A v2 batch stores each timestamp as a delta from the first: the spread
  // must fit in an int64 (-1 next to INT64_MAX does not).
  int64_t lo = INT64_MAX, hi = INT64_MIN, spread = 0;
  for (const RecordInput& r : records) {
    lo = std::min(lo, r.timestamp.value());
    hi = std::max(hi, r.timestamp.value());
  }
  if (__builtin_sub_overflow(hi, lo, &spread)) return BadTimestamp(hi);
  std::string batch = BuildBatch(records, {}, /*no_timestamp_is_now=*/false);
  if (codec == Compression::kNone) return batch;
  return ConvertCompression({reinterpret_cast<const uint8_t*>(batch.data()), batch.size()}, codec);
}

}  // namespace headrace
