// WriteCache: how a log write treats the page cache (FileEnv::WriteAt,
// Log::AppendWithOffsets).
#pragma once

#include <cstdint>

namespace headrace {

// How a write treats the page cache. kKeep: a plain buffered write. kDrop:
// uncached buffered I/O (Linux 6.14+ RWF_DONTCACHE): the data goes through
// the page cache as usual, reads see it at once and fsync works as usual,
// but its pages are dropped once written back, so the writer does not grow
// the page cache and reuses the same few pages. Where the kernel or the
// file system does not support it (EOPNOTSUPP), a plain write is made
// instead (one failed call per write).
enum class WriteCache : uint8_t { kKeep, kDrop };

}  // namespace headrace
