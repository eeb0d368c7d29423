#include "common/output_buffer.h"

#include "common/file_slice.h"

namespace headrace {

bool OutputBuffer::PatchInt32BE(int64_t pos, int32_t v) {
  int64_t at = 0;
  for (auto& c : chunks_) {
    int64_t n = c.size();
    if (pos >= at && pos + 4 <= at + n) {
      if (c.is_slice) return false;
      uint32_t u = static_cast<uint32_t>(v);
      char* p = c.bytes.data() + (pos - at);
      p[0] = static_cast<char>(u >> 24);
      p[1] = static_cast<char>(u >> 16);
      p[2] = static_cast<char>(u >> 8);
      p[3] = static_cast<char>(u);
      return true;
    }
    at += n;
  }
  return false;
}

std::string OutputBuffer::Flatten() const {
  std::string out;
  out.reserve(static_cast<size_t>(size_));
  for (const auto& c : chunks_) {
    if (!c.is_slice) {
      out += c.bytes;
      continue;
    }
    size_t start = out.size();
    out.resize(start + static_cast<size_t>(c.slice.length));
    // A short file leaves zeros: callers are tests.
    (void)ReadSlice(c.slice, reinterpret_cast<uint8_t*>(out.data() + start));
  }
  return out;
}

}  // namespace headrace
