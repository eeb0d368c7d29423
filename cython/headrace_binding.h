// Small C++ helpers for the Cython binding (cython/log.pxi). They exist where
// Cython cannot express something directly: Result<T> has no default
// constructor (so its value is moved out in the same expression), and reading
// FileSlices needs a pread loop. Everything here runs without the GIL.
#pragma once

#include <errno.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "headrace/status.h"
#include "headrace/types.h"

namespace headrace::binding {

// Moves the value of `result` into *out, or returns its error (then *out is
// untouched).
template <typename T>
Status MoveResult(Result<T> result, T* out) {
  if (!result.ok()) return result.status();
  *out = std::move(result).value();
  return Status::OK();
}

// Appends the bytes of every slice, in order, to *out. A slice that ends
// before its stated length (the file shrank) is an IOError.
inline Status ReadSlices(const std::vector<FileSlice>& slices, std::string* out) {
  for (const FileSlice& s : slices) {
    const size_t start = out->size();
    out->resize(start + static_cast<size_t>(s.length));
    int64_t done = 0;
    while (done < s.length) {
      ssize_t n = ::pread(s.fd, out->data() + start + done, static_cast<size_t>(s.length - done),
                          static_cast<off_t>(s.position.value() + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        return Status::FromErrno("pread of a log segment", errno);
      }
      if (n == 0) return Status::IOError("log segment ended inside a read slice");
      done += n;
    }
  }
  return Status::OK();
}

inline void SleepMicros(int64_t micros) {
  std::this_thread::sleep_for(std::chrono::microseconds(micros));
}

}  // namespace headrace::binding
