#include "log/file_reader.h"

#include <algorithm>

namespace headrace {

Result<const uint8_t*> FileReader::Peek(int64_t pos, int64_t n) {
  if (pos < 0 || n < 0 || pos + n > limit_)
    return Status::Corruption("need bytes [" + std::to_string(pos) + ", " +
                              std::to_string(pos + n) + ") but the file ends at " +
                              std::to_string(limit_));
  if (pos >= buf_pos_ && pos + n <= buf_pos_ + buf_len_) return buf_.data() + (pos - buf_pos_);
  int64_t want = std::min(std::max(n, readahead_), limit_ - pos);
  if (static_cast<int64_t>(buf_.size()) < want) buf_.resize(want);
  static const std::string kNoPath = "segment";
  HR_ASSIGN_OR_RETURN(int64_t got, env_->ReadAt(fd_, kNoPath, buf_.data(), want, pos));
  buf_pos_ = pos;
  buf_len_ = got;
  if (got < n)
    return Status::Corruption("file ends at " + std::to_string(pos + got) + " before " +
                              std::to_string(pos + n));
  return buf_.data();
}

}  // namespace headrace
