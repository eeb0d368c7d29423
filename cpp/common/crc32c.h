// CRC32C (Castagnoli), as used by Kafka RecordBatch v2. Uses the SSE4.2
// crc32 instruction when the CPU has it (checked once at startup), else a
// portable slicing-by-8 table implementation. Both give identical results.
#pragma once

#include <cstddef>
#include <cstdint>

namespace headrace::crc32c {

// Extends `crc` (0 for a fresh checksum) over data[0, n).
uint32_t Extend(uint32_t crc, const void* data, size_t n);
inline uint32_t Value(const void* data, size_t n) { return Extend(0, data, n); }

// The portable implementation, exposed for tests and benchmarks.
uint32_t ExtendPortable(uint32_t crc, const void* data, size_t n);
// True when Extend uses the hardware instruction.
bool HardwareAccelerated();

}  // namespace headrace::crc32c
