// Reading the bytes a FileSlice names into memory (the copy path; record
// bytes normally go out with sendfile and never enter user space), and
// asking whether they are in the page cache.
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
// ReadSlice that never waits for the disk (preadv2 RWF_NOWAIT): true when
// all of s was copied, false (dst partly written) when part of it is not in
// the page cache. Errors as ReadSlice. Never blocks on storage, so it may
// run on an I/O thread.
Result<bool> ReadSliceIfCached(const FileSlice& s, uint8_t* dst);
// Whether every page of [pos, pos + len) of `fd` is in the page cache
// (cachestat(2), Linux 6.5+). True when the kernel cannot tell (older
// kernels), i.e. callers then behave as if the range were cached.
bool RangeCached(int fd, int64_t pos, int64_t len);

}  // namespace headrace
