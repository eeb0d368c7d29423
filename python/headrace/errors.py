"""headrace's exceptions.

Every error raised by the C++ core reaches Python through one function,
``check_status`` in ``cython/error.pxi``, which picks the class below for the
core's status code. Each class also subclasses the builtin exception a Python
programmer would expect, so ``except ValueError`` or ``except OSError`` work
as usual:

=====================  ==========================  ==========================
status code            exception                   also a
=====================  ==========================  ==========================
NotFound               NotFoundError               LookupError
Corruption             CorruptRecordError          ValueError
InvalidArgument        InvalidArgumentError        ValueError
IOError                HeadraceIOError             OSError
OutOfRange             OffsetOutOfRangeError       IndexError
AlreadyExists          AlreadyExistsError          FileExistsError
TooLarge               RecordTooLargeError         ValueError
Closed                 LogClosedError              ValueError
Unsupported            UnsupportedError            NotImplementedError
=====================  ==========================  ==========================
"""
from __future__ import annotations

__all__ = [
    "HeadraceError",
    "NotFoundError",
    "CorruptRecordError",
    "InvalidArgumentError",
    "HeadraceIOError",
    "OffsetOutOfRangeError",
    "AlreadyExistsError",
    "RecordTooLargeError",
    "LogClosedError",
    "UnsupportedError",
]


class HeadraceError(Exception):
    """Base class of every error headrace raises."""


class NotFoundError(HeadraceError, LookupError):
    """A file, topic, offset or key that does not exist."""


class CorruptRecordError(HeadraceError, ValueError):
    """Bytes on disk or on the wire failed validation (CRC, magic, lengths)."""


class InvalidArgumentError(HeadraceError, ValueError):
    """The caller passed something malformed (e.g. an unknown config key)."""


class HeadraceIOError(HeadraceError, OSError):
    """The operating system refused an operation; the message has errno text."""


class OffsetOutOfRangeError(HeadraceError, IndexError):
    """An offset outside [log start offset, log end offset]."""


class AlreadyExistsError(HeadraceError, FileExistsError):
    """Something that must be new already exists."""


class RecordTooLargeError(HeadraceError, ValueError):
    """A batch or request above a configured limit (max.message.bytes)."""


class LogClosedError(HeadraceError, ValueError):
    """The object was used after close()."""


class UnsupportedError(HeadraceError, NotImplementedError):
    """A format version, codec or feature headrace does not implement."""
