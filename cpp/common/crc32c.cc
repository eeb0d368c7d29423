#include "common/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace headrace::crc32c {
namespace {

constexpr uint32_t kPoly = 0x82F63B78u;  // reflected Castagnoli polynomial

struct Tables {
  std::array<std::array<uint32_t, 256>, 8> t{};
  constexpr Tables() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i)
      for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
  }
};
constexpr Tables kTables;

// Feeding n zero bytes to a CRC register is a linear map of its 32 bits:
// multiplication by x^(8n) mod P. ShiftTable holds that map for one fixed n
// as four byte-indexed tables (the image of each byte of the register), so
// Apply costs four lookups whatever n is.
struct ShiftTable {
  std::array<std::array<uint32_t, 256>, 4> t{};
  explicit ShiftTable(size_t n) {
    std::array<uint32_t, 32> basis{};  // image of each single bit
    for (int bit = 0; bit < 32; ++bit) {
      uint32_t c = 1u << bit;
      for (size_t i = 0; i < n; ++i) c = kTables.t[0][c & 0xff] ^ (c >> 8);
      basis[bit] = c;
    }
    for (int k = 0; k < 4; ++k)
      for (uint32_t b = 0; b < 256; ++b) {
        uint32_t v = 0;
        for (int j = 0; j < 8; ++j)
          if (b & (1u << j)) v ^= basis[8 * k + j];
        t[k][b] = v;
      }
  }
  uint32_t Apply(uint32_t c) const {
    return t[0][c & 0xff] ^ t[1][(c >> 8) & 0xff] ^ t[2][(c >> 16) & 0xff] ^ t[3][c >> 24];
  }
};

#if defined(__x86_64__)
// Three-way interleaving: the crc32 instruction has a latency of several
// cycles but a throughput of one per cycle, so three independent streams
// over three adjacent blocks of `kLong`/`kShort` bytes keep it busy. The
// register after A|B|C is shift(shift(crc(A), |B|) ^ crc0(B), |C|) ^ crc0(C),
// where crc0 starts from a zero register (CRC is linear in register + data).
constexpr size_t kLong = 4096;  // blocks for inputs of >= 12 KiB
constexpr size_t kShort = 256;  // blocks for inputs of >= 768 bytes
const ShiftTable kShiftLong(kLong);
const ShiftTable kShiftShort(kShort);

__attribute__((target("sse4.2"))) inline uint64_t Crc3Way(uint64_t c0, const uint8_t* p,
                                                          size_t block, const ShiftTable& shift) {
  uint64_t c1 = 0, c2 = 0;
  const uint8_t* end = p + block;
  for (; p < end; p += 8) {
    uint64_t a, b, c;
    std::memcpy(&a, p, 8);
    std::memcpy(&b, p + block, 8);
    std::memcpy(&c, p + 2 * block, 8);
    c0 = _mm_crc32_u64(c0, a);
    c1 = _mm_crc32_u64(c1, b);
    c2 = _mm_crc32_u64(c2, c);
  }
  uint32_t r = shift.Apply(static_cast<uint32_t>(c0)) ^ static_cast<uint32_t>(c1);
  return shift.Apply(r) ^ static_cast<uint32_t>(c2);
}

__attribute__((target("sse4.2"))) uint32_t ExtendHardware(uint32_t crc, const void* data,
                                                          size_t n) {
  auto p = static_cast<const uint8_t*>(data);
  uint64_t c = ~crc;
  while (n && (reinterpret_cast<uintptr_t>(p) & 7)) {
    c = _mm_crc32_u8(static_cast<uint32_t>(c), *p++);
    --n;
  }
  for (; n >= 3 * kLong; p += 3 * kLong, n -= 3 * kLong) c = Crc3Way(c, p, kLong, kShiftLong);
  for (; n >= 3 * kShort; p += 3 * kShort, n -= 3 * kShort) c = Crc3Way(c, p, kShort, kShiftShort);
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    c = _mm_crc32_u64(c, w);
    p += 8;
    n -= 8;
  }
  while (n--) c = _mm_crc32_u8(static_cast<uint32_t>(c), *p++);
  return ~static_cast<uint32_t>(c);
}

bool DetectSse42() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2");
}
const bool kHaveSse42 = DetectSse42();
#else
const bool kHaveSse42 = false;
#endif

}  // namespace

uint32_t ExtendPortable(uint32_t crc, const void* data, size_t n) {
  auto p = static_cast<const uint8_t*>(data);
  uint32_t c = ~crc;
  const auto& t = kTables.t;
  while (n >= 8) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= c;  // little-endian hosts only (x86-64, aarch64)
    c = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^
        t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^ t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n--) c = t[0][(c ^ *p++) & 0xff] ^ (c >> 8);
  return ~c;
}

bool HardwareAccelerated() { return kHaveSse42; }

uint32_t Extend(uint32_t crc, const void* data, size_t n) {
#if defined(__x86_64__)
  if (kHaveSse42) return ExtendHardware(crc, data, n);
#endif
  return ExtendPortable(crc, data, n);
}

}  // namespace headrace::crc32c
