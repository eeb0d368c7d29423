// Byte-level encodings used by the on-disk and wire formats: big-endian
// fixed-width integers and Kafka's zigzag varints (protobuf style, at most 5
// bytes for int32 and 10 for int64). Internal to the log engine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace headrace::coding {

inline uint16_t LoadBE16(const uint8_t* p) { return static_cast<uint16_t>((p[0] << 8) | p[1]); }
inline uint32_t LoadBE32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return __builtin_bswap32(v);
}
inline uint64_t LoadBE64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return __builtin_bswap64(v);
}
inline void StoreBE16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
inline void StoreBE32(uint8_t* p, uint32_t v) {
  v = __builtin_bswap32(v);
  std::memcpy(p, &v, 4);
}
inline void StoreBE64(uint8_t* p, uint64_t v) {
  v = __builtin_bswap64(v);
  std::memcpy(p, &v, 8);
}

inline uint64_t ZigZagEncode(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline int64_t ZigZagDecode(uint64_t v) {
  return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
}

// Reads one zigzag varint from [*p, end) of at most `max_bytes` bytes.
// Advances *p and returns true on success; returns false (leaving *p
// unspecified) when the input ends first or the varint is too long.
inline bool ReadVarint(const uint8_t** p, const uint8_t* end, int max_bytes, int64_t* out) {
  uint64_t raw = 0;
  const uint8_t* q = *p;
  for (int i = 0; i < max_bytes; ++i) {
    if (q == end) return false;
    uint8_t b = *q++;
    raw |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
    if ((b & 0x80) == 0) {
      *p = q;
      *out = ZigZagDecode(raw);
      return true;
    }
  }
  return false;
}
inline bool ReadVarint32(const uint8_t** p, const uint8_t* end, int32_t* out) {
  int64_t v;
  if (!ReadVarint(p, end, 5, &v) || v < INT32_MIN || v > INT32_MAX) return false;
  *out = static_cast<int32_t>(v);
  return true;
}
inline bool ReadVarint64(const uint8_t** p, const uint8_t* end, int64_t* out) {
  return ReadVarint(p, end, 10, out);
}

// Appends the zigzag varint encoding of `v` to `out`.
inline void AppendVarint(std::string* out, int64_t v) {
  uint64_t raw = ZigZagEncode(v);
  while (raw >= 0x80) {
    out->push_back(static_cast<char>((raw & 0x7f) | 0x80));
    raw >>= 7;
  }
  out->push_back(static_cast<char>(raw));
}
inline int VarintSize(int64_t v) {
  uint64_t raw = ZigZagEncode(v);
  int n = 1;
  while (raw >= 0x80) { raw >>= 7; ++n; }
  return n;
}

}  // namespace headrace::coding
