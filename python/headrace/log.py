"""headrace.Log: one partition's log on local disk, from Python.

A thin, friendly layer over the C++ log engine (``headrace._core.CoreLog``).
The directory holds Kafka-style segments (``<20-digit base offset>.log``,
``.index``, ``.timeindex``); opening it recovers it (an invalid or torn tail
is cut, missing or garbled indexes are rebuilt). Every call that does I/O
releases the GIL.

Example::

    with headrace.Log("/tmp/demo-0", segment_bytes=1 << 20) as log:
        base = log.append([(b"k", b"v"), (None, "text")])
        for record in log.read(base):
            print(record.offset, record.key, record.value)
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, NamedTuple, Optional, Sequence, Union

from headrace import _core

__all__ = ["Log", "Record", "RetentionResult", "CONFIG_KEYS"]

#: The keyword arguments Log() accepts: Kafka topic config names with dots as
#: underscores (max_index_bytes is segment.index.bytes), plus
#: preallocate_indexes.
CONFIG_KEYS: frozenset[str] = frozenset(_core.CONFIG_KEYS)

BytesLike = Union[bytes, bytearray, memoryview]
KeyOrValue = Union[bytes, bytearray, memoryview, str, None]
Header = tuple[str, Optional[bytes]]


class Record(NamedTuple):
    """One record read back from the log."""

    offset: int
    key: Optional[bytes]
    value: Optional[bytes]
    headers: list[Header]
    timestamp: int  # ms since the epoch (LogAppendTime if the log uses it)


@dataclass(frozen=True)
class RetentionResult:
    """What apply_retention() deleted."""

    segments_deleted: int
    bytes_deleted: int
    start_offset: int  # the log start offset afterwards


def _as_bytes(what: str, v: KeyOrValue) -> Optional[bytes]:
    if v is None or isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode("utf-8")
    if isinstance(v, (bytearray, memoryview)):
        return bytes(v)
    raise TypeError(f"record {what} must be bytes, str or None, not {type(v).__name__}")


def _header(h: Any) -> tuple[bytes, Optional[bytes]]:
    try:
        key, value = h
    except (TypeError, ValueError):
        raise TypeError(f"a header must be a (key, value) pair, not {h!r}") from None
    if isinstance(key, str):
        key = key.encode("utf-8", "surrogateescape")
    elif not isinstance(key, bytes):
        raise TypeError(f"header key must be str or bytes, not {type(key).__name__}")
    return key, _as_bytes("header value", value)


def _record_tuple(r: Any) -> tuple:
    """(key, value, headers, timestamp) from a (key, value) pair or a dict."""
    if isinstance(r, Mapping):
        unknown = set(r) - {"key", "value", "headers", "timestamp"}
        if unknown:
            raise TypeError(f"unknown record fields: {sorted(unknown)}")
        ts = r.get("timestamp")
        if ts is None:
            ts = -1
        elif isinstance(ts, bool) or not isinstance(ts, int):
            raise TypeError(f"record timestamp must be an int (ms), not {type(ts).__name__}")
        headers = [_header(h) for h in (r.get("headers") or ())]
        return (_as_bytes("key", r.get("key")), _as_bytes("value", r.get("value")), headers, ts)
    if isinstance(r, tuple) and len(r) == 2:
        return (_as_bytes("key", r[0]), _as_bytes("value", r[1]), [], -1)
    raise TypeError(f"a record must be a (key, value) tuple or a dict, not {type(r).__name__}")


class Log:
    """A partition log in directory ``path``, created if missing.

    Config keywords are Kafka's topic settings with dots as underscores:
    ``segment_bytes``, ``segment_ms``, ``retention_ms``, ``retention_bytes``,
    ``index_interval_bytes``, ``max_index_bytes`` (segment.index.bytes),
    ``max_message_bytes``, ``flush_messages``, ``flush_ms``,
    ``message_timestamp_type`` ('CreateTime' or 'LogAppendTime'), and
    ``preallocate_indexes`` (bool). An unknown key raises
    InvalidArgumentError naming it.

    One appender at a time is enough for the engine (it serialises writers);
    reads may run from other threads concurrently. Use as a context manager or
    call close().
    """

    def __init__(self, path: Union[str, os.PathLike], **config: Any) -> None:
        self._path = os.fspath(path)
        self._core = _core.CoreLog(self._path, config)

    # -- lifecycle -------------------------------------------------------
    def close(self) -> None:
        """Flushes and closes the log (waiting for calls in flight). Later
        calls raise LogClosedError; closing twice is harmless."""
        self._core.close()

    @property
    def closed(self) -> bool:
        return self._core.closed

    def __enter__(self) -> "Log":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        if self.closed:
            return f"<headrace.Log {self._path!r} closed>"
        return f"<headrace.Log {self._path!r} [{self.start_offset}, {self.end_offset})>"

    # -- writing ---------------------------------------------------------
    def append(self, records: Union[Sequence[Any], BytesLike]) -> int:
        """Appends ONE batch and returns the offset given to its first record.

        ``records`` is either a list whose items are ``(key, value)`` tuples
        or dicts with ``key``, ``value``, ``headers`` (list of (str, bytes))
        and ``timestamp`` (ms; default now) — keys and values are bytes, str
        (encoded UTF-8) or None — or raw RecordBatch v2 bytes (bytes,
        bytearray or memoryview holding one or more whole batches, which are
        validated and appended as they are).

        Raises CorruptRecordError for a bad batch (CRC, magic other than 2,
        lengths, record count), RecordTooLargeError above max_message_bytes,
        InvalidArgumentError for no records; on any error the log is
        unchanged.
        """
        if isinstance(records, (bytes, bytearray, memoryview)):
            view = memoryview(records)
            if not view.c_contiguous:
                view = memoryview(view.tobytes())
            base, _last = self._core.append_raw(view.cast("B"))
            return base
        if isinstance(records, (str, Mapping)) or not isinstance(records, Iterable):
            raise TypeError("append() takes a list of records or RecordBatch bytes")
        base, _last = self._core.append_records([_record_tuple(r) for r in records])
        return base

    def flush(self) -> None:
        """fsyncs everything appended so far."""
        self._core.flush()

    def truncate(self, offset: int) -> None:
        """Removes every record with offset >= ``offset`` (OffsetOutOfRangeError
        outside [start_offset, end_offset]). Batches are removed whole: if
        ``offset`` falls inside a batch, that batch goes too and end_offset
        becomes its base offset."""
        self._core.truncate(offset)

    def apply_retention(self, now_ms: Optional[int] = None) -> RetentionResult:
        """Deletes whole non-active segments by retention_ms (judged at
        ``now_ms``, default the current time) and retention_bytes."""
        if now_ms is None:
            now_ms = time.time_ns() // 1_000_000
        segments, nbytes, start = self._core.apply_retention(now_ms)
        return RetentionResult(segments, nbytes, start)

    # -- reading ---------------------------------------------------------
    def read(self, offset: int, max_bytes: int = 1048576) -> list[Record]:
        """Records from ``offset`` on, taken from whole batches of about
        ``max_bytes`` in total (at least one batch however large). Records
        below ``offset`` in the first batch are dropped. ``offset ==
        end_offset`` gives []. Raises OffsetOutOfRangeError outside
        [start_offset, end_offset]."""
        return list(map(Record._make, self._core.read(offset, max_bytes)))

    def offset_for_time(self, timestamp_ms: int) -> Optional[int]:
        """The offset of the first record whose timestamp is >= ``timestamp_ms``
        (Kafka's ListOffsets by time), or None if there is none."""
        return self._core.offset_for_time(timestamp_ms)

    # -- state -----------------------------------------------------------
    @property
    def path(self) -> str:
        return self._path

    @property
    def start_offset(self) -> int:
        """The first offset still in the log."""
        return self._core.start_offset

    @property
    def end_offset(self) -> int:
        """The next offset to be assigned (log end offset)."""
        return self._core.end_offset

    @property
    def flushed_offset(self) -> int:
        """Every offset below this one has been fsynced."""
        return self._core.flushed_offset

    @property
    def size_bytes(self) -> int:
        """Total size of the segment .log files."""
        return self._core.size_bytes

    @property
    def segment_count(self) -> int:
        return self._core.segment_count

    @property
    def recovery_report(self) -> dict[str, Any]:
        """What opening the log found: ``segments`` (count),
        ``truncated_bytes``, ``truncated_at`` (offset where the valid log ends
        if its tail was cut, else None), ``reason`` ('' if nothing was cut),
        ``indexes_rebuilt`` (bool)."""
        return self._core.recovery_report
