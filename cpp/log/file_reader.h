// Buffered positional reads of one file, bounded by a byte limit: the
// segment scanner and the read path look at batch headers through it so
// that runs of small batches cost one pread per window, not one per batch.
#pragma once

#include <cstdint>
#include <vector>

#include "common/file_env.h"
#include "headrace/status.h"

namespace headrace {

class FileReader {
 public:
  // Reads never look at bytes at or past `limit`. `readahead` is the least
  // a refill reads (when that much is left before the limit). `env` must
  // outlive the reader.
  FileReader(FileEnv* env, int fd, int64_t limit, int64_t readahead)
      : env_(env), fd_(fd), limit_(limit), readahead_(readahead) {}

  int64_t limit() const { return limit_; }

  // Returns a pointer to the n bytes at [pos, pos + n), valid until the next
  // call. Errors: Corruption when pos + n > limit (a torn or lying length),
  // IOError when the read fails.
  Result<const uint8_t*> Peek(int64_t pos, int64_t n);

 private:
  FileEnv* env_;
  int fd_;
  int64_t limit_;
  int64_t readahead_;
  std::vector<uint8_t> buf_;
  int64_t buf_pos_ = 0;
  int64_t buf_len_ = 0;
};

}  // namespace headrace
