# The one place where a C++ Status becomes a Python exception (DESIGN rule 6).
from headrace import errors as _errors

cdef dict _EXCEPTION_FOR_CODE = {
    <int>StatusCode.kNotFound: _errors.NotFoundError,
    <int>StatusCode.kCorruption: _errors.CorruptRecordError,
    <int>StatusCode.kInvalidArgument: _errors.InvalidArgumentError,
    <int>StatusCode.kIOError: _errors.HeadraceIOError,
    <int>StatusCode.kOutOfRange: _errors.OffsetOutOfRangeError,
    <int>StatusCode.kAlreadyExists: _errors.AlreadyExistsError,
    <int>StatusCode.kTooLarge: _errors.RecordTooLargeError,
    <int>StatusCode.kClosed: _errors.LogClosedError,
    <int>StatusCode.kUnsupported: _errors.UnsupportedError,
}


cdef int check_status(const CStatus& status) except -1:
    """Returns 0 for OK; raises the headrace.errors class of a non-OK code,
    with the status message as its text."""
    if status.ok():
        return 0
    cls = _EXCEPTION_FOR_CODE.get(<int>status.code(), _errors.HeadraceError)
    raise cls(status.message().decode("utf-8", "replace"))


cdef int raise_invalid_argument(str message) except -1:
    """Raises InvalidArgumentError through check_status (binding-side checks)."""
    return check_status(CStatus.InvalidArgument(message.encode("utf-8")))
