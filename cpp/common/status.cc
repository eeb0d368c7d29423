#include "headrace/status.h"

#include <cstring>

namespace headrace {

Status Status::FromErrno(const std::string& context, int err) {
  const char* name = strerrorname_np(err);
  Status s = IOError(context + ": " + std::strerror(err) + " (" +
                     (name != nullptr ? name : "errno " + std::to_string(err)) + ")");
  s.sys_errno_ = err;
  return s;
}

std::string Status::ToString() const {
  const char* name = "OK";
  switch (code_) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kNotFound: name = "NotFound"; break;
    case StatusCode::kCorruption: name = "Corruption"; break;
    case StatusCode::kInvalidArgument: name = "InvalidArgument"; break;
    case StatusCode::kIOError: name = "IOError"; break;
    case StatusCode::kOutOfRange: name = "OutOfRange"; break;
    case StatusCode::kAlreadyExists: name = "AlreadyExists"; break;
    case StatusCode::kTooLarge: name = "TooLarge"; break;
    case StatusCode::kClosed: name = "Closed"; break;
    case StatusCode::kUnsupported: name = "Unsupported"; break;
  }
  return std::string(name) + ": " + message_;
}

}  // namespace headrace
