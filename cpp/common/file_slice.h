// Reading the bytes a FileSlice names into memory (the copy path; record
// bytes normally go out with sendfile and never enter user space).
#pragma once

#include <cstdint>
#include <span>

#include "headrace/status.h"
#include "headrace/types.h"

namespace headrace {

// Copies s.length bytes at s.position of s.fd into dst (pread, retried on
// EINTR and short reads). IOError when pread fails, Corruption when the file
// ends before the slice does.
Status ReadSlice(const FileSlice& s, uint8_t* dst);
// ReadSlice of each of `slices` in turn, back to back into dst (which holds
// the sum of their lengths). Stops at the first error.
Status ReadSlices(std::span<const FileSlice> slices, uint8_t* dst);

}  // namespace headrace
