"""headrace: a Kafka-wire-compatible streaming log broker with a C++ core."""
from headrace._core import __version__
from headrace.errors import (
    AlreadyExistsError,
    CorruptRecordError,
    HeadraceError,
    HeadraceIOError,
    InvalidArgumentError,
    LogClosedError,
    NotFoundError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
    UnsupportedError,
)
from headrace.embedded import EmbeddedBroker
from headrace.embedded_cluster import EmbeddedCluster
from headrace.log import Log, Record, RetentionResult

__all__ = [
    "__version__",
    "EmbeddedBroker",
    "EmbeddedCluster",
    "Log",
    "Record",
    "RetentionResult",
    "HeadraceError",
    "AlreadyExistsError",
    "CorruptRecordError",
    "HeadraceIOError",
    "InvalidArgumentError",
    "LogClosedError",
    "NotFoundError",
    "OffsetOutOfRangeError",
    "RecordTooLargeError",
    "UnsupportedError",
]
