# The C++ logger's line format (cpp/common/logging.h), set by headrace.logs
# so the core's lines and Python's match.

cdef extern from "common/logging.h" namespace "headrace" nogil:
    cdef enum class CLogFormat "headrace::LogFormat"(int):
        kText "headrace::LogFormat::kText"
        kJson "headrace::LogFormat::kJson"
    void CSetLogFormat "headrace::SetLogFormat"(CLogFormat format)


def set_log_format(str name):
    """'text' or 'json': the format of every later line the C++ core logs."""
    if name == "text":
        CSetLogFormat(CLogFormat.kText)
    elif name == "json":
        CSetLogFormat(CLogFormat.kJson)
    else:
        raise ValueError(f"log format must be text or json, got {name!r}")
