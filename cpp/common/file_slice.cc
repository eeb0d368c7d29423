#include "common/file_slice.h"

#include <unistd.h>

#include <cerrno>

namespace headrace {

Status ReadSlice(const FileSlice& s, uint8_t* dst) {
  int64_t done = 0;
  while (done < s.length) {
    ssize_t n = ::pread(s.fd, dst + done, static_cast<size_t>(s.length - done),
                        static_cast<off_t>(s.position.value() + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno("pread", errno);
    if (n == 0) return Status::Corruption("file ends inside a slice");
    done += n;
  }
  return Status::OK();
}

Status ReadSlices(std::span<const FileSlice> slices, uint8_t* dst) {
  for (const FileSlice& s : slices) {
    HR_RETURN_IF_ERROR(ReadSlice(s, dst));
    dst += s.length;
  }
  return Status::OK();
}

}  // namespace headrace
