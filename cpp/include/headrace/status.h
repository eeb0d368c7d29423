// Errors are values. Nothing in headrace's C++ core throws across a public
// boundary: fallible functions return Status or Result<T>. The Cython binding
// has exactly one place (check_status in cython/_core.pyx) that turns a
// non-OK Status into a Python exception.
#pragma once

#include <cassert>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace headrace {

enum class StatusCode : int {
  kOk = 0,
  kNotFound = 1,         // a file, topic, offset or key that does not exist
  kCorruption = 2,       // bytes on disk or on the wire fail validation
  kInvalidArgument = 3,  // the caller passed something malformed
  kIOError = 4,          // the OS refused (errno in the message)
  kOutOfRange = 5,       // an offset outside [log start, log end]
  kAlreadyExists = 6,
  kTooLarge = 7,         // a batch/request above a configured limit
  kClosed = 8,           // the object was closed
  kUnsupported = 9,      // a version/feature we do not implement
};

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK; costs nothing.
  static Status OK() { return Status(); }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status Corruption(std::string m) { return {StatusCode::kCorruption, std::move(m)}; }
  static Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
  static Status IOError(std::string m) { return {StatusCode::kIOError, std::move(m)}; }
  // IOError naming the errno: "<context>: <strerror> (<ENAME>)"; sys_errno()
  // returns `err`.
  static Status FromErrno(const std::string& context, int err);
  static Status OutOfRange(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
  static Status AlreadyExists(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }
  static Status TooLarge(std::string m) { return {StatusCode::kTooLarge, std::move(m)}; }
  static Status Closed(std::string m) { return {StatusCode::kClosed, std::move(m)}; }
  static Status Unsupported(std::string m) { return {StatusCode::kUnsupported, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // An optional refinement of code() chosen by one layer for its own error
  // space (0 = none; not shown by ToString). The broker state layer stores
  // the Kafka error code here (see cpp/broker/base/kafka_error.h).
  int32_t detail() const { return detail_; }
  // The errno of a failed system call (FromErrno), 0 otherwise.
  int32_t sys_errno() const { return sys_errno_; }
  Status WithDetail(int32_t detail) && {
    detail_ = detail;
    return std::move(*this);
  }
  // "Corruption: <message>" or "OK".
  std::string ToString() const;

 private:
  Status(StatusCode c, std::string m) : code_(c), message_(std::move(m)) {}
  StatusCode code_ = StatusCode::kOk;
  int32_t detail_ = 0;
  int32_t sys_errno_ = 0;
  std::string message_;
};

// Result<T> holds either a T or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    assert(!status_.ok() && "Result built from an OK status has no value");
  }
  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace headrace

// Early-return helpers. REQUIRES: used inside a function returning Status or
// Result<...>.
#define HR_RETURN_IF_ERROR(expr)            \
  do {                                      \
    ::headrace::Status _hr_st = (expr);     \
    if (!_hr_st.ok()) return _hr_st;        \
  } while (0)

#define HR_CONCAT_INNER(a, b) a##b
#define HR_CONCAT(a, b) HR_CONCAT_INNER(a, b)
#define HR_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(tmp).value()
#define HR_ASSIGN_OR_RETURN(lhs, expr) \
  HR_ASSIGN_OR_RETURN_IMPL(HR_CONCAT(_hr_res_, __LINE__), lhs, expr)
